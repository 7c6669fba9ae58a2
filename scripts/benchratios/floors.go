package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/narad/narad/io/osfs"
)

// The floors: what this machine costs before Narad does any work of its own. They do not
// replace the targets' baselines (the bare handler in narad-bench's process, the disk's
// fdatasync); they say how much of each gap no broker on this machine could close:
//
//   - the disk's part of one acknowledged produce: write over zeros, fdatasync, then the
//     device read-back every acknowledgement waits for (DESIGN.md section 3), via io/osfs;
//   - HTTP between two processes: a bare handler in a process of its own (as a daemon
//     is), at 1 client (p50) and at 64 (msgs/s and its CPU per message);
//   - three processes: the same 64 clients spread over three bare processes.
type floorFigures struct {
	readBackP50Ms         float64
	bare1P50Ms            float64
	bareProc64, bareCPUMs float64
	bare3, bare3CPUMs     float64
}

// bareProcBase is the port below the bare processes' (one on 7391, then three on
// 7392-7394).
const bareProcBase = 7390

// barePIDHeader carries a bare process's pid in every answer: startBare knows by it that
// the process it started answers, not another one left on the port.
const barePIDHeader = "X-Bare-Pid"

// serveBare serves a bare handler at addr until the process is stopped: benchratios runs
// itself with -serve-bare to put it in a process of its own.
func serveBare(addr string) error {
	pid := strconv.Itoa(os.Getpid())
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set(barePIDHeader, pid)
		w.WriteHeader(http.StatusAccepted)
	}))
}

// floors measures the floorFigures.
func (c config) floors(f *floorFigures) error {
	var err error
	if f.readBackP50Ms, err = readBackP50(c.dir, 2000); err != nil {
		return err
	}
	one, err := startBare(bareProcBase, 1)
	if err != nil {
		return err
	}
	r1, err := c.load(addrsOf(one), "produce", 1)
	if err != nil {
		stopAll(one)
		return err
	}
	f.bare1P50Ms = r1.P50Ms
	r, cpu, err := c.loadCPU(one, addrsOf(one), "produce", 64)
	stopAll(one)
	if err != nil {
		return err
	}
	f.bareProc64, f.bareCPUMs = r.MsgsPerSec, cpu/float64(max(r.Messages, 1))
	three, err := startBare(bareProcBase+1, 3)
	if err != nil {
		return err
	}
	defer stopAll(three)
	r, cpu, err = c.loadCPU(three, addrsOf(three), "produce", 64)
	f.bare3, f.bare3CPUMs = r.MsgsPerSec, cpu/float64(max(r.Messages, 1))
	return err
}

// startBare starts n bare processes on the ports after base and waits until each answers.
// The answer must carry the process's own pid: one that failed to listen (the port
// taken) never answers, and the wait fails.
func startBare(base, n int) ([]*node, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	command := func(_ int, addr string) (*exec.Cmd, error) {
		return exec.Command(exe, "-serve-bare", addr), nil
	}
	ready := func(nd *node) error {
		answers := func() bool {
			resp, err := http.Get("http://" + nd.addr + "/")
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.Header.Get(barePIDHeader) == strconv.Itoa(nd.cmd.Process.Pid)
		}
		if !pollUntil(10*time.Second, answers) {
			return fmt.Errorf("bare handler at %s does not answer", nd.addr)
		}
		return nil
	}
	return startEach(base, n, command, ready)
}

// readBackP50 writes 1 KiB at successive offsets of a file filled with zeros, fdatasyncs
// it and reads it back from the device, n times, through io/osfs as the WAL does, and
// answers the p50 of the three together in milliseconds: the disk's floor under one
// acknowledged produce.
func readBackP50(dir string, n int) (float64, error) {
	d, err := osfs.Open(dir + "/readback-probe")
	if err != nil {
		return 0, err
	}
	defer func() { _ = d.Close() }()
	if err := d.Create("f"); err != nil {
		return 0, err
	}
	// Over zeros the file holds and has synced, as the WAL writes (core/wal/prealloc.go).
	if err := d.WriteAt("f", 0, make([]byte, n*1024)); err != nil {
		return 0, err
	}
	if err := d.Sync("f"); err != nil {
		return 0, err
	}
	buf := bytes.Repeat([]byte("narad"), 1024/5+1)[:1024]
	lat := make([]time.Duration, 0, n)
	for i := range n {
		off := int64(i) * 1024
		t := time.Now()
		if err := d.WriteAt("f", off, buf); err != nil {
			return 0, err
		}
		if err := d.Sync("f"); err != nil {
			return 0, err
		}
		got, err := d.ReadDevice("f", off, len(buf))
		if err != nil {
			return 0, err
		}
		lat = append(lat, time.Since(t))
		if !bytes.Equal(got, buf) {
			return 0, fmt.Errorf("read-back probe: the device holds other bytes at %d", off)
		}
	}
	return p50Ms(lat), nil
}

// p50Ms is the median of lat in milliseconds.
func p50Ms(lat []time.Duration) float64 {
	slices.Sort(lat)
	return float64(lat[len(lat)/2]) / 1e6
}
