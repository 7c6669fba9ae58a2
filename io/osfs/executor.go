package osfs

import (
	"sync"

	"github.com/narad/narad/core/disk"
)

// QueueSize is how many submitted ops an Executor holds before Submit blocks. Size the
// channel that deliver feeds at least QueueSize plus the number of workers and Submit can
// never deadlock against deliver (see Submit).
const QueueSize = 4096

// Executor runs disk ops on a fixed pool of goroutines. Each worker takes an op from the
// queue, performs it with disk.Apply and hands the Result to deliver. Ops run
// concurrently and complete in any order; the core orders dependent ops itself by waiting
// for the first one's Result.
//
// Submit and the workers move Ops and Results by value: the Executor adds no allocation
// per op to what the FS does.
type Executor struct {
	fs      disk.FS
	deliver func(disk.Result)
	ops     chan disk.Op
	wg      sync.WaitGroup

	mu     sync.RWMutex // shared by Submit, exclusive by Close
	closed bool
}

// NewExecutor starts workers goroutines (at least 1) that run ops on fs and pass each
// Result to deliver. deliver is called from the worker goroutines, concurrently; it must
// be safe for that, and it should be quick (typically a send on the shell's event
// channel), since a worker runs no other op until it returns.
func NewExecutor(fs disk.FS, workers int, deliver func(disk.Result)) *Executor {
	if workers < 1 {
		workers = 1
	}
	e := &Executor{
		fs:      fs,
		deliver: deliver,
		ops:     make(chan disk.Op, QueueSize),
	}
	e.wg.Add(workers)
	for range workers {
		go e.work()
	}
	return e
}

func (e *Executor) work() {
	defer e.wg.Done()
	for op := range e.ops {
		e.deliver(disk.Apply(e.fs, op))
	}
}

// Submit queues op. Every submitted op is performed and its Result delivered exactly
// once, even if Close is called meanwhile.
//
// When QueueSize ops are already waiting, Submit blocks until a worker takes one: that is
// the backpressure on the submitter. It can only block forever if deliver itself waits
// for the submitting goroutine (for example a full, unbuffered or small event channel read
// by the same loop that calls Submit); give that channel room for QueueSize+workers
// results, or keep the core's ops in flight below QueueSize (group commit keeps a few).
//
// Submit after Close panics: its Result could never be delivered.
func (e *Executor) Submit(op disk.Op) {
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		panic("osfs: Executor.Submit after Close")
	}
	e.ops <- op
	e.mu.RUnlock()
}

// Close stops accepting ops, waits until every op already submitted has been performed and
// its Result delivered, and returns when all worker goroutines have exited. deliver must
// keep working until Close returns. Closing twice is a no-op. Close does not close the FS.
func (e *Executor) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.wg.Wait()
		return
	}
	e.closed = true
	close(e.ops)
	e.mu.Unlock()
	e.wg.Wait()
}
