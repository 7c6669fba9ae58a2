package walshell

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/io/osfs"
)

// diskWorkers is the size of the pool that runs disk ops. The WAL keeps few ops in flight
// (one group write or sync, a checkpoint write, a few removes), so a handful suffices.
const diskWorkers = 4

// ErrClosed answers an append to a closed shell.
var ErrClosed = errors.New("walshell: closed")

// Shell is a WAL on real files, safe for concurrent use.
type Shell struct {
	mu        sync.Mutex
	log       *wal.Log
	dir       *osfs.Dir
	exec      *osfs.Executor
	waiters   map[uint64]chan wal.AppendDone
	nextToken uint64
	timer     *time.Timer
	timerAt   int64
	closed    bool           // no new appends
	stopped   bool           // no new disk ops: the executor is closing
	inflight  sync.WaitGroup // appends staged and not yet answered

	recovered chan struct{}
	recovery  *wal.Recovery
	failed    error
}

var donePool = sync.Pool{New: func() any { return make(chan wal.AppendDone, 1) }}

// Open recovers the WAL in root/<cfg.Dir> and returns once it is ready for appends, with
// what recovery found (records at or above the checkpoint, to be dispatched again).
func Open(root string, cfg wal.Config) (*Shell, *wal.Recovery, error) {
	dir, err := osfs.Open(root)
	if err != nil {
		return nil, nil, err
	}
	s := &Shell{log: wal.New(cfg), dir: dir, waiters: map[uint64]chan wal.AppendDone{}, recovered: make(chan struct{})}
	s.exec = osfs.NewExecutor(dir, diskWorkers, s.onDisk)
	s.timer = time.AfterFunc(time.Hour, s.onTimer)
	s.timer.Stop()
	s.step(func(now int64) { s.log.Open(now) })
	<-s.recovered // closed on recovery or on failure, whichever comes first
	if s.recovery == nil {
		err := s.failed
		_ = s.Close() // the recovery failure is the error to report
		return nil, nil, err
	}
	return s, s.recovery, nil
}

func now() int64 { return time.Now().UnixNano() }

// step runs f on the core under the mutex, then carries out the actions it produced.
func (s *Shell) step(f func(now int64)) {
	s.mu.Lock()
	f(now())
	rd := s.log.Ready()
	answers := s.resolve(rd.Done)
	if rd.Recovered != nil {
		s.recovery = rd.Recovered
		close(s.recovered)
	}
	if rd.Failed != nil {
		s.failed = rd.Failed
		if s.recovery == nil {
			close(s.recovered)
		}
	}
	s.armTimer()
	stopped := s.stopped
	s.mu.Unlock()
	for i, ch := range answers {
		ch <- rd.Done[i] // buffered: never blocks
	}
	if stopped {
		return // closing: no append waits on these ops (Close waited for them all)
	}
	for _, op := range rd.Ops {
		s.exec.Submit(op)
	}
}

// resolve finds the waiting caller of every answer. Called with s.mu held.
func (s *Shell) resolve(done []wal.AppendDone) []chan wal.AppendDone {
	chans := make([]chan wal.AppendDone, len(done))
	for i, d := range done {
		chans[i] = s.waiters[d.Token]
		delete(s.waiters, d.Token)
	}
	return chans
}

// armTimer points the timer at the core's next deadline. Called with s.mu held.
func (s *Shell) armTimer() {
	at, ok := s.log.NextDeadline()
	if !ok || at == s.timerAt || s.closed {
		return
	}
	s.timerAt = at
	s.timer.Reset(time.Duration(max(0, at-now())))
}

func (s *Shell) onTimer() {
	s.step(func(now int64) {
		s.timerAt = 0
		s.log.Tick(now)
	})
}

func (s *Shell) onDisk(res disk.Result) {
	s.step(func(now int64) { s.log.DiskDone(now, res) })
}

// Append stores r and returns its seq once it is durable. ctx is honoured only until the
// record is staged: after that the call waits for the true outcome of the sync, because
// reporting failure for a record that became durable would make a retrying client
// duplicate it.
func (s *Shell) Append(ctx context.Context, r wal.Record) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ch := donePool.Get().(chan wal.AppendDone)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		donePool.Put(ch)
		return 0, ErrClosed
	}
	s.nextToken++
	tok := s.nextToken
	s.waiters[tok] = ch
	s.inflight.Add(1)
	s.mu.Unlock()
	s.step(func(now int64) { s.log.Append(now, tok, r) })
	d := <-ch
	donePool.Put(ch)
	s.inflight.Done()
	return d.Seq, d.Err
}

// SetCheckpoint records that every record below seq was dispatched.
func (s *Shell) SetCheckpoint(seq uint64) {
	s.step(func(now int64) { s.log.SetCheckpoint(now, seq) })
}

// Stats returns the WAL's counters.
func (s *Shell) Stats() wal.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Stats()
}

// Failed returns the WAL's sticky failure, or nil.
func (s *Shell) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Failed()
}

// Close refuses new appends, waits for every staged append to be answered, stops the
// disk workers and closes the files.
func (s *Shell) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.timer.Stop()
	s.mu.Unlock()
	s.inflight.Wait()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.exec.Close()
	return s.dir.Close()
}
