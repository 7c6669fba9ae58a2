package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// bareServer is a plain net/http server in this process that reads and discards every
// request body and answers 202 with an empty body: the machine's ceiling for single-message
// requests, with the load generator sharing the same cores as a real node would.
type bareServer struct {
	addr string
	srv  *http.Server
	done chan struct{}
}

func bareHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body) // a bare handler: read the body, keep nothing
	w.WriteHeader(http.StatusAccepted)
}

func startBare() (*bareServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &bareServer{
		addr: ln.Addr().String(),
		srv: &http.Server{
			Handler:           http.HandlerFunc(bareHandler),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(ln) // http.ErrServerClosed once stop begins
	}()
	return b, nil
}

// stop shuts the server down, waiting at most a few seconds for open requests.
func (b *bareServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if b.srv.Shutdown(ctx) != nil {
		_ = b.srv.Close() // shutting down: the connections go either way
	}
	<-b.done
}
