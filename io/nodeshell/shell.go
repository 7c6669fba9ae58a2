package nodeshell

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/io/osfs"
)

// diskWorkers runs disk ops: group commits, partition commits (one in flight per
// partition, up to 16), reads for consumes and ack flushes can overlap.
const diskWorkers = 16

// ErrFlushTimeout: Close gave up waiting for the checkpoint and acks to be durable. Nothing
// acknowledged is lost; a restart replays more and may redeliver acked messages.
var ErrFlushTimeout = errors.New("nodeshell: flush on close timed out")

// Shell is a node on real files, safe for concurrent use.
type Shell struct {
	mu        sync.Mutex
	node      *node.Node
	dir       *osfs.Dir
	exec      *osfs.Executor
	waiters   map[uint64]chan node.Response
	nextToken uint64
	timer     *time.Timer
	timerAt   int64
	closed    bool
	stopped   bool
	failed    chan struct{} // closed when the node fails
	failure   error
	inflight  sync.WaitGroup
	metrics   *metrics
	draining  bool          // Close waits for the dispatcher's backlog to empty
	drained   chan struct{} // closed once it is empty (or the node failed)
	flushing  bool          // Close asked the core to flush
	flushed   chan struct{} // closed once the core reports the flush durable
	// submitting is held shared by a step from the moment it reads stopped == false (under
	// mu) until its ops are submitted; Close takes it exclusively after setting stopped,
	// so that it stops the executor only once no step is about to submit.
	submitting sync.RWMutex
	link       *peerLink // the peer transport (OpenCluster); nil for a single node
	// onUsers is told the users when they may have changed (WatchUsers).
	onUsers      func([]meta.User, map[string]string)
	usersVersion uint64
	id           uint64 // this node's member id (the metastore's raft id)
}

var respPool = sync.Pool{New: func() any { return make(chan node.Response, 1) }}

// Open starts a node whose data lives under root. It returns at once; the node recovers
// in the background and Ready reports when it serves. The node sends no message to
// peers: it is a cluster of one (see OpenCluster).
func Open(root string, cfg node.Config) (*Shell, error) { return OpenWrapped(root, cfg, nil) }

// OpenWrapped is Open with the data directory's file system passed through wrap: the
// end-to-end tests inject disk faults into the real shell with it.
func OpenWrapped(root string, cfg node.Config, wrap func(disk.FS) disk.FS) (*Shell, error) {
	return open(root, cfg, newMetrics(), nil, wrap)
}

func open(root string, cfg node.Config, m *metrics, link *peerLink, wrap func(disk.FS) disk.FS) (*Shell, error) {
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, err
	}
	dir, err := osfs.Open(root)
	if err != nil {
		return nil, err
	}
	s := &Shell{node: node.New(cfg, rng.New(binary.LittleEndian.Uint64(seed[:]))), dir: dir,
		waiters: map[uint64]chan node.Response{}, failed: make(chan struct{}), metrics: m,
		drained: make(chan struct{}), flushed: make(chan struct{}), link: link, id: runID(cfg.Meta.ID)}
	if link != nil {
		link.shell = s // before the first step starts a sender
	}
	var fs disk.FS = dir
	if wrap != nil {
		fs = wrap(dir)
	}
	s.exec = osfs.NewExecutor(fs, diskWorkers, s.onDisk)
	s.timer = time.AfterFunc(time.Hour, s.onTimer)
	s.timer.Stop()
	s.step(func(now int64) { s.node.Open(now) })
	return s, nil
}

func now() int64 { return time.Now().UnixNano() }

// step runs f on the core under the mutex, then carries out the actions it produced.
func (s *Shell) step(f func(now int64)) {
	s.mu.Lock()
	t := now()
	f(t)
	rd := s.node.Ready()
	s.noteUsers() // before any answer goes out: a request after it sees the change
	chans := make([]chan node.Response, len(rd.Responses))
	for i, r := range rd.Responses {
		chans[i] = s.waiters[r.Token]
		delete(s.waiters, r.Token)
	}
	if rd.Failed != nil && s.failure == nil {
		s.failure = rd.Failed
		close(s.failed)
	}
	if s.draining && (s.failure != nil || s.node.Stats().BacklogRecords == 0) {
		s.draining = false
		close(s.drained)
	}
	if s.flushing && s.node.Flushed() {
		s.flushing = false
		close(s.flushed)
	}
	s.armTimer(t)
	var full []node.Outbound
	if s.link != nil {
		full = s.link.enqueue(rd.Messages) // the senders send them after the mutex is released
		s.link.updatePeers(s.node, t)
	}
	submit := !s.stopped && len(rd.Ops) > 0
	if submit {
		s.submitting.RLock()
	}
	s.mu.Unlock()
	for i, ch := range chans {
		if ch != nil {
			ch <- rd.Responses[i] // buffered: never blocks
		}
	}
	if len(full) > 0 {
		defer s.link.reportFailed(full) // after this step's ops are submitted
	}
	if !submit {
		return // stopped: the executor is closing or closed
	}
	for _, op := range rd.Ops {
		s.metrics.opIssued(op, t)
		s.exec.Submit(op)
	}
	s.submitting.RUnlock()
}

func (s *Shell) armTimer(t int64) {
	at, ok := s.node.NextDeadline()
	if !ok || at == s.timerAt || s.stopped {
		return
	}
	s.timerAt = at
	s.timer.Reset(time.Duration(max(0, at-t)))
}

func (s *Shell) onTimer() {
	s.step(func(now int64) {
		s.timerAt = 0
		s.node.Tick(now)
	})
}

func (s *Shell) onDisk(res disk.Result) {
	s.metrics.opDone(res, now())
	s.step(func(now int64) { s.node.DiskDone(now, res) })
}

// call submits a request through submit (which gets the token) and waits for its
// response. ctx is honoured while waiting only for consumes (cancel drops a long poll);
// other requests wait for their true outcome, because a produce staged in the WAL must
// not be reported failed if it becomes durable.
func (s *Shell) call(ctx context.Context, cancellable bool, submit func(now int64, tok uint64)) (node.Response, error) {
	ch := respPool.Get().(chan node.Response)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		respPool.Put(ch)
		return node.Response{}, node.ErrShuttingDown
	}
	s.nextToken++
	tok := s.nextToken
	s.waiters[tok] = ch
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	s.step(func(now int64) { submit(now, tok) })
	if !cancellable {
		r := <-ch
		respPool.Put(ch)
		return r, nil
	}
	select {
	case r := <-ch:
		respPool.Put(ch)
		return r, nil
	case <-ctx.Done():
		s.step(func(now int64) { s.node.CancelConsume(now, tok) })
		s.mu.Lock()
		_, stillWaiting := s.waiters[tok]
		delete(s.waiters, tok)
		s.mu.Unlock()
		if !stillWaiting {
			r := <-ch // answered meanwhile: it may carry leases; give it to the caller
			respPool.Put(ch)
			return r, nil
		}
		return node.Response{}, ctx.Err()
	}
}

// Failed is closed when the node stops on a fatal error (see Failure).
func (s *Shell) Failed() <-chan struct{} { return s.failed }

// Failure is the fatal error, or nil.
func (s *Shell) Failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// FlushTimeout bounds how long Close waits for the dispatcher to commit what the WAL holds,
// and then how long it waits for the checkpoint and the acks to be durable.
const FlushTimeout = 5 * time.Second

// Close refuses new requests, waits for those in flight (a produce staged in the WAL gets
// its true answer), lets the dispatcher commit the records the WAL holds to their
// partitions (bounded by FlushTimeout: past it, a restart replays the rest, which is
// safe), makes the WAL checkpoint and every accepted ack durable (bounded by FlushTimeout),
// then stops the disk workers and closes the files. Without the wait for the dispatcher, a
// record answered just before Close would be committed after the checkpoint was flushed,
// and a clean restart would deliver it twice.
func (s *Shell) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.step(func(int64) { s.draining = true }) // step closes drained if the backlog is empty
	drainBound := time.NewTimer(FlushTimeout)
	select {
	case <-s.drained:
	case <-drainBound.C:
	}
	drainBound.Stop()
	s.step(func(now int64) {
		s.flushing = true
		s.node.Flush(now)
	})
	var flushErr error
	bound := time.NewTimer(FlushTimeout)
	select {
	case <-s.flushed:
	case <-bound.C:
		flushErr = ErrFlushTimeout
	}
	bound.Stop()
	var linkErr error
	if s.link != nil {
		// After the drain and the flush (remote commits and their answers travel over
		// it), before the executor stops: a peer's message still being handled may submit
		// ops, and when close returns no handler runs any more.
		linkErr = s.link.close()
	}
	s.mu.Lock()
	s.timer.Stop()
	s.stopped = true
	s.mu.Unlock()
	// Steps that read stopped == false are submitting; later ones will not. (A Submit
	// blocked on a full queue still finishes: the workers' own steps see stopped.)
	s.submitting.Lock()
	//lint:ignore SA2001 an empty critical section on purpose: a barrier
	s.submitting.Unlock()
	s.exec.Close()
	return errors.Join(flushErr, linkErr, s.dir.Close())
}
