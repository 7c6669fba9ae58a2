package osfs

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narad/narad/core/disk"
	"go.uber.org/goleak"
)

// stubFS records the ops it runs; Sync calls gate (if set) before returning.
type stubFS struct {
	gate    func(name string)
	running atomic.Int64 // ops in progress
	peak    atomic.Int64
}

func (s *stubFS) op(name string) error {
	n := s.running.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if s.gate != nil {
		s.gate(name)
	}
	s.running.Add(-1)
	return nil
}

func (s *stubFS) Create(name string) error                     { return s.op(name) }
func (s *stubFS) WriteAt(name string, _ int64, _ []byte) error { return s.op(name) }
func (s *stubFS) ReadAt(name string, off int64, n int) ([]byte, error) {
	return []byte(name), s.op(name)
}
func (s *stubFS) ReadDevice(name string, off int64, n int) ([]byte, error) {
	return s.ReadAt(name, off, n)
}
func (s *stubFS) Sync(name string) error              { return s.op(name) }
func (s *stubFS) Truncate(name string, _ int64) error { return s.op(name) }
func (s *stubFS) Rename(from, _ string) error         { return s.op(from) }
func (s *stubFS) Remove(name string) error            { return s.op(name) }
func (s *stubFS) List(dir string) ([]string, error)   { return []string{dir}, s.op(dir) }
func (s *stubFS) SyncDir(dir string) error            { return s.op(dir) }
func (s *stubFS) ListDirs(dir string) ([]string, error) {
	return []string{dir}, s.op(dir)
}
func (s *stubFS) RemoveDir(dir string) error { return s.op(dir) }

// collector records delivered results by ID.
type collector struct {
	mu   sync.Mutex
	seen map[uint64]disk.Result
	dups int
}

func newCollector() *collector { return &collector{seen: make(map[uint64]disk.Result)} }

func (c *collector) deliver(r disk.Result) {
	c.mu.Lock()
	if _, ok := c.seen[r.ID]; ok {
		c.dups++
	}
	c.seen[r.ID] = r
	c.mu.Unlock()
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

var kinds = []disk.Kind{disk.KindCreate, disk.KindWriteAt, disk.KindReadAt,
	disk.KindSync, disk.KindTruncate, disk.KindRename, disk.KindRemove,
	disk.KindList, disk.KindSyncDir}

func TestExecutorDeliversEachResultOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	fs := &stubFS{}
	c := newCollector()
	ex := NewExecutor(fs, 8, c.deliver)
	const n = 3 * QueueSize // more than the queue holds: Submit blocks and resumes
	for i := range n {
		k := kinds[i%len(kinds)]
		ex.Submit(disk.Op{ID: uint64(1000 + i), Kind: k, Name: fmt.Sprint(i), Len: 1})
	}
	ex.Close()
	if c.count() != n || c.dups != 0 {
		t.Fatalf("delivered %d distinct results (%d duplicates), want %d", c.count(), c.dups, n)
	}
	for i := range n {
		r, ok := c.seen[uint64(1000+i)]
		if !ok {
			t.Fatalf("no result for op %d", 1000+i)
		}
		if want := kinds[i%len(kinds)]; r.Kind != want || r.Err != nil {
			t.Fatalf("op %d: result %+v, want kind %v and no error", 1000+i, r, want)
		}
		switch r.Kind {
		case disk.KindReadAt:
			if string(r.Data) != fmt.Sprint(i) {
				t.Fatalf("op %d: data %q", 1000+i, r.Data)
			}
		case disk.KindList:
			if len(r.Names) != 1 || r.Names[0] != fmt.Sprint(i) {
				t.Fatalf("op %d: names %v", 1000+i, r.Names)
			}
		}
	}
}

// All workers run ops at the same time: each op waits until every worker holds one.
func TestExecutorRunsConcurrently(t *testing.T) {
	defer goleak.VerifyNone(t)
	const workers = 6
	var arrived sync.WaitGroup
	arrived.Add(workers)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	fs := &stubFS{gate: func(string) {
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second): // guard: a serial executor would hang here
		}
	}}
	c := newCollector()
	ex := NewExecutor(fs, workers, c.deliver)
	for i := range workers {
		ex.Submit(disk.Op{ID: uint64(i), Kind: disk.KindSync, Name: "f"})
	}
	ex.Close()
	if got := fs.peak.Load(); got != workers {
		t.Fatalf("peak concurrency %d, want %d", got, workers)
	}
	if c.count() != workers {
		t.Fatalf("delivered %d, want %d", c.count(), workers)
	}
}

// Close waits for in-flight and queued ops, delivers all of them, and then refuses Submit.
func TestExecutorCloseWaits(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	started := make(chan struct{}, 16)
	fs := &stubFS{gate: func(string) {
		started <- struct{}{}
		<-release
	}}
	c := newCollector()
	ex := NewExecutor(fs, 2, c.deliver)
	const n = 10 // 2 in flight, 8 queued
	for i := range n {
		ex.Submit(disk.Op{ID: uint64(i), Kind: disk.KindWriteAt, Name: "f"})
	}
	<-started
	<-started
	closed := make(chan int)
	go func() {
		ex.Close()
		closed <- c.count() // results delivered by the time Close returned
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while ops were blocked")
	default:
	}
	close(release)
	if got := <-closed; got != n {
		t.Fatalf("Close returned after %d of %d results", got, n)
	}
	ex.Close() // idempotent

	defer func() {
		if recover() == nil {
			t.Fatal("Submit after Close did not panic")
		}
	}()
	ex.Submit(disk.Op{ID: 99, Kind: disk.KindSync, Name: "f"})
}

// End to end on a real Dir: creates, then concurrent writes to several files, then syncs,
// each stage submitted once the previous stage's results are in (as the core does).
func TestExecutorWithDir(t *testing.T) {
	defer goleak.VerifyNone(t)
	d, err := Open(t.TempDir())
	must(t, err)
	defer d.Close()
	results := make(chan disk.Result, QueueSize+4)
	ex := NewExecutor(d, 4, func(r disk.Result) { results <- r })
	defer ex.Close()

	id := uint64(0)
	stage := func(ops []disk.Op) map[uint64]disk.Result {
		for _, op := range ops {
			ex.Submit(op)
		}
		got := make(map[uint64]disk.Result, len(ops))
		for range ops {
			r := <-results
			if _, dup := got[r.ID]; dup {
				t.Fatalf("result %d delivered twice", r.ID)
			}
			got[r.ID] = r
		}
		for _, op := range ops {
			r, ok := got[op.ID]
			if !ok || r.Kind != op.Kind {
				t.Fatalf("op %v: result %+v", op, r)
			}
		}
		return got
	}
	op := func(k disk.Kind, name string, off int64, data []byte) disk.Op {
		id++
		return disk.Op{ID: id, Kind: k, Name: name, Off: off, Data: data, Len: len(data)}
	}

	const files, recs = 4, 64
	var ops []disk.Op
	for f := range files {
		ops = append(ops, op(disk.KindCreate, fmt.Sprintf("p%d/seg", f), 0, nil))
	}
	for _, r := range stage(ops) {
		must(t, r.Err)
	}
	ops = ops[:0]
	for f := range files {
		for i := range recs {
			ops = append(ops, op(disk.KindWriteAt, fmt.Sprintf("p%d/seg", f), int64(i*8), fmt.Appendf(nil, "%d:%06d", f, i)))
		}
	}
	for _, r := range stage(ops) {
		must(t, r.Err)
	}
	ops = ops[:0]
	for f := range files {
		ops = append(ops, op(disk.KindSync, fmt.Sprintf("p%d/seg", f), 0, nil))
		ops = append(ops, op(disk.KindSyncDir, fmt.Sprintf("p%d", f), 0, nil))
	}
	ops = append(ops, op(disk.KindSync, "missing", 0, nil))
	var missing uint64 = id
	for rid, r := range stage(ops) {
		if rid == missing {
			wantIs(t, r.Err, disk.ErrNotExist)
			continue
		}
		must(t, r.Err)
	}
	ops = ops[:0]
	for f := range files {
		ops = append(ops, disk.Op{ID: id + 1 + uint64(f), Kind: disk.KindReadAt, Name: fmt.Sprintf("p%d/seg", f), Len: recs*8 + 100})
	}
	for _, r := range stage(ops) {
		must(t, r.Err)
		f := int(r.ID - id - 1)
		if len(r.Data) != recs*8 {
			t.Fatalf("p%d: read %d bytes, want %d", f, len(r.Data), recs*8)
		}
		for i := range recs {
			if got, want := string(r.Data[i*8:i*8+8]), fmt.Sprintf("%d:%06d", f, i); got != want {
				t.Fatalf("p%d record %d = %q, want %q", f, i, got, want)
			}
		}
	}
}
