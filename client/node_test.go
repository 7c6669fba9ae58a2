package client_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/httpapi"
	"github.com/narad/narad/io/nodeshell"
)

// nodeAddr is the address of the node the examples and tests of this package talk to: a
// real single node (the shell on real files and its HTTP API, as `narad serve -dev` runs
// it) started by TestMain on a loopback port.
var nodeAddr string

// readyBound bounds the wait for the node to recover.
const readyBound = 20 * time.Second

func TestMain(m *testing.M) {
	stop, err := startNode()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start a node:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startNode opens a node in a temporary directory, serves its API with security off on
// 127.0.0.1 and waits until it is ready. stop shuts it down and removes the directory.
func startNode() (stop func(), err error) {
	dir, err := os.MkdirTemp("", "narad-client-test-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	nodeAddr = ln.Addr().String()
	shell, err := nodeshell.Open(dir, node.Config{NodeID: "n1", Addr: nodeAddr})
	if err != nil {
		return nil, err
	}
	api := httpapi.New(shell, httpapi.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	stop = func() {
		_ = hs.Close()
		_ = shell.Close()
		_ = os.RemoveAll(dir)
	}
	deadline := time.Now().Add(readyBound)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for api.Ready() != nil {
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("not ready within %v: %v", readyBound, api.Ready())
		}
		<-tick.C
	}
	return stop, nil
}
