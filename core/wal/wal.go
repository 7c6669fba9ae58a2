package wal

import (
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

type flushState uint8

const (
	flushIdle      flushState = iota
	flushWriting              // the group's write is in flight
	flushSyncing              // the group's fdatasync is in flight
	flushVerifying            // the group's bytes are being read back
	flushRotating             // a new active segment is being created
	flushCutting              // a group write that failed for lack of space is being cut back
)

// Log is the ingress write-ahead log of one node: a deterministic state machine.
// See doc.go for how it is driven.
type Log struct {
	cfg     Config
	state   state
	failure error
	out     Ready

	nextOpID uint64
	ops      map[uint64]opPurpose // ops in flight and what they are for

	segs        []segment // oldest first; the last is the active one
	nextSeq     uint64    // seq of the next append
	durableNext uint64    // every seq below this is durable and was acknowledged

	// Group commit: appends stage into stagedBuf while a group is in flight.
	flush       flushState
	staged      []waiter
	stagedBuf   []byte
	stagedAtNs  int64
	inflight    []waiter
	inflightBuf []byte
	inflightOff int64 // where the group was written in the active segment
	inflightLen int   // bytes the group write stores: its frames and any zeros (prealloc.go)
	verifyTries int   // read-backs of the group so far
	spareBuf    []byte
	// A full device (nospace.go): the last group write found no space (until one fits),
	// and appends are refused with ErrNoSpace until refuseUntil.
	noSpace     bool
	refuseUntil int64

	// Checkpoint: the first seq not yet dispatched, made durable lazily.
	ckptWanted      uint64
	ckptDurable     uint64
	ckptGen         uint64 // generation of the newest durable slot
	ckptWriting     uint64 // value being written, 0 when no checkpoint write is in flight
	ckptFlushAt     int64  // when the pending checkpoint move is written; 0 = none pending
	ckptSlot        []byte // the slot being written, compared with its device read-back
	ckptVerifyTries int    // read-backs of that slot so far

	// The skip-set above the checkpoint (checkpoint_skip.go), written in the same slot.
	skipWanted, skipDurable, skipWriting Skip

	stats Stats

	compacting     bool
	compactPending int // removes of the current compaction not yet completed

	rec *recovery
}

// New returns a WAL that does nothing until Open.
func New(cfg Config) *Log {
	return &Log{cfg: cfg.withDefaults(), ops: make(map[uint64]opPurpose)}
}

// Event is one input to Step.
type Event interface{ isWALEvent() }

// Events.
type (
	// OpenEvent starts recovery.
	OpenEvent struct{}
	// AppendEvent asks to append Record; the answer is an AppendDone with the same Token.
	AppendEvent struct {
		Token  uint64
		Record Record
	}
	// DiskEvent is the completion of an Op this machine issued.
	DiskEvent struct{ Result disk.Result }
	// TickEvent says time has passed (a deadline from NextDeadline may have come).
	TickEvent struct{}
	// CheckpointEvent says every record below Seq has been dispatched.
	CheckpointEvent struct{ Seq uint64 }
)

func (OpenEvent) isWALEvent()       {}
func (AppendEvent) isWALEvent()     {}
func (DiskEvent) isWALEvent()       {}
func (TickEvent) isWALEvent()       {}
func (CheckpointEvent) isWALEvent() {}

// Step feeds one event, observed at nowNs (nanoseconds on the driver's clock).
func (l *Log) Step(nowNs int64, ev Event) {
	switch e := ev.(type) {
	case OpenEvent:
		l.Open(nowNs)
	case AppendEvent:
		l.Append(nowNs, e.Token, e.Record)
	case DiskEvent:
		l.DiskDone(nowNs, e.Result)
	case TickEvent:
		l.Tick(nowNs)
	case CheckpointEvent:
		l.SetCheckpoint(nowNs, e.Seq)
	default:
		assert.Failf("wal: unknown event %T", ev)
	}
}

// Ready returns the actions produced since the last call and clears them.
func (l *Log) Ready() Ready {
	r := l.out
	l.out = Ready{}
	return r
}

// NextDeadline is the time at which the driver must send a TickEvent, if any.
func (l *Log) NextDeadline() (int64, bool) {
	var at int64
	if l.state == stateReady && len(l.staged) > 0 && l.flush == flushIdle {
		at = l.stagedAtNs + l.cfg.SyncBackstopNs
	}
	if l.ckptFlushAt != 0 && l.ckptWriting == 0 && (at == 0 || l.ckptFlushAt < at) {
		at = l.ckptFlushAt
	}
	return at, at != 0
}

// Stats counts what the WAL did since New.
type Stats struct {
	GroupsSynced  uint64 // group commits whose fdatasync succeeded
	RecordsSynced uint64 // appends they acknowledged
	BytesSynced   uint64 // frame bytes they covered
	NoSpaceWrites uint64 // group writes that failed for lack of space (each tried again)
	NoSpaceNow    bool   // the device is full: appends are refused with ErrNoSpace
}

// Stats returns the counters.
func (l *Log) Stats() Stats {
	s := l.stats
	s.NoSpaceNow = l.noSpace
	return s
}

// Failed returns the sticky failure, or nil.
func (l *Log) Failed() error { return l.failure }

// DurableCheckpoint is the checkpoint as it is on disk.
func (l *Log) DurableCheckpoint() uint64 { return l.ckptDurable }

// NextSeq is the seq the next append gets.
func (l *Log) NextSeq() uint64 { return l.nextSeq }

// Append stages r for the next group commit. The answer comes later as an AppendDone.
// Once staged, the outcome depends only on the disk: there is no way to cancel it.
func (l *Log) Append(nowNs int64, token uint64, r Record) {
	l.stage(nowNs, token, r)
	l.maybeFlush()
}

// AppendBatch stages every record (tokens[i] answers rs[i]) before a group commit may
// start, so that a batch arriving at an idle WAL goes out in one write and one fdatasync
// rather than its first record alone. Each record is answered as if appended alone.
func (l *Log) AppendBatch(nowNs int64, tokens []uint64, rs []Record) {
	assert.That(len(tokens) == len(rs), "wal: AppendBatch: one token per record")
	for i := range rs {
		l.stage(nowNs, tokens[i], rs[i])
	}
	l.maybeFlush()
}

// stage validates r and adds it to the staged group (or answers it with an error).
func (l *Log) stage(nowNs int64, token uint64, r Record) {
	switch l.state {
	case stateFailed:
		l.answer(token, 0, l.failure)
		return
	case stateNew, stateRecovering:
		l.answer(token, 0, ErrNotReady)
		return
	}
	if err := r.Validate(); err != nil {
		l.answer(token, 0, err)
		return
	}
	if l.noSpace && nowNs < l.refuseUntil {
		l.answer(token, 0, ErrNoSpace)
		return
	}
	if len(l.stagedBuf)+r.FrameBytes() > l.cfg.StagedBytesMax {
		l.answer(token, 0, ErrFull)
		return
	}
	r.Seq = l.nextSeq
	l.nextSeq++
	if r.TimestampMs == 0 {
		r.TimestampMs = nowNs / 1_000_000
	}
	if len(l.staged) == 0 {
		l.stagedAtNs = nowNs
	}
	l.stagedBuf = AppendFrame(l.stagedBuf, &r)
	l.staged = append(l.staged, waiter{token: token, seq: r.Seq})
}

func (l *Log) answer(token, seq uint64, err error) {
	l.out.Done = append(l.out.Done, AppendDone{Token: token, Seq: seq, Err: err})
}

// Tick fires deadlines: the group-commit backstop and the lazy checkpoint write.
func (l *Log) Tick(nowNs int64) {
	if l.state != stateReady {
		return
	}
	l.maybeFlush()
	if l.ckptFlushAt != 0 && nowNs >= l.ckptFlushAt && l.ckptWriting == 0 {
		l.writeCheckpoint()
	}
}

// SetCheckpoint records that every record below seq was dispatched. The move is durable
// within CheckpointSyncIntervalNs; segments wholly below the durable checkpoint are then
// removed. Moving it backwards, or past a record not yet durable, is a programmer error.
func (l *Log) SetCheckpoint(nowNs int64, seq uint64) {
	if l.state != stateReady {
		return
	}
	assert.That(seq >= l.ckptWanted, "wal: checkpoint moved backwards")
	assert.That(seq <= l.durableNext, "wal: checkpoint passed a record that is not durable")
	if seq == l.ckptWanted {
		return
	}
	l.ckptWanted = seq
	if l.ckptFlushAt == 0 {
		l.ckptFlushAt = nowNs + l.cfg.CheckpointSyncIntervalNs
	}
	l.maybeRotate()
}

// FlushCheckpoint makes the wanted checkpoint due now instead of at its lazy deadline
// (clean shutdown: a restart then replays nothing that was already dispatched).
func (l *Log) FlushCheckpoint(nowNs int64) {
	if l.ckptFlushAt != 0 && l.ckptFlushAt > nowNs {
		l.ckptFlushAt = nowNs
	}
	l.Tick(nowNs)
}

// CheckpointFlushed reports whether the durable checkpoint is the wanted one.
func (l *Log) CheckpointFlushed() bool {
	return (l.ckptDurable == l.ckptWanted && l.skipDurable.Equal(l.skipWanted)) || l.failure != nil
}

// DiskDone feeds the completion of an op this machine issued.
func (l *Log) DiskDone(nowNs int64, res disk.Result) {
	purpose, ok := l.ops[res.ID]
	assert.That(ok, "wal: completion of an unknown op")
	delete(l.ops, res.ID)
	if l.state == stateFailed {
		return // nothing issued before the failure can change the answers given
	}
	switch purpose {
	case purposeRecover:
		l.recoverStep(res)
	case purposeWrite:
		l.onGroupWritten(nowNs, res)
	case purposeCut:
		l.onGroupCut(nowNs, res)
	case purposeSync:
		l.onGroupSynced(res)
	case purposeVerify:
		l.onGroupVerified(res)
	case purposeRotate:
		l.onRotateStep(res)
	case purposeCheckpoint:
		l.onCheckpointStep(nowNs, res)
	case purposeCompact:
		l.onCompactStep(res)
	}
}

func (l *Log) issue(p opPurpose, op disk.Op) {
	l.nextOpID++
	op.ID = l.nextOpID
	l.ops[op.ID] = p
	l.out.Ops = append(l.out.Ops, op)
}

func (l *Log) active() *segment { return &l.segs[len(l.segs)-1] }

func segmentName(dir string, firstSeq uint64) string {
	return fmt.Sprintf("%s/%016x.seg", dir, firstSeq)
}

func (l *Log) checkpointName() string { return l.cfg.Dir + "/" + CheckpointFile }
