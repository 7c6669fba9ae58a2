package wal

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/disk"
)

// Config holds the WAL's tunables. Zero fields take the defaults below.
type Config struct {
	Dir                      string // directory of segments and the checkpoint, default "wal"
	SyncBackstopNs           int64  // bound on a missed group-commit wakeup
	CheckpointSyncIntervalNs int64  // a checkpoint move is durable at most this much later
	SegmentRotateBytes       int64  // a fully dispatched active segment past this is rotated
	SegmentBytesMax          int64  // an active segment past this is rotated regardless
	StagedBytesMax           int    // bytes waiting for the next group commit; more is refused
	ReadRetriesMax           int    // re-reads of a frame that fails its CRC during recovery
	RecoveryReadBytes        int    // bytes read per recovery read
	PreallocBytes            int64  // zeros written ahead of the records (prealloc.go); < 0: none
}

// Defaults, from the seed's table of compiled-in numbers (produce-path.md).
const (
	DefaultDir                      = "wal"
	DefaultSyncBackstopNs           = 10_000_000  // ingress_wal_sync_interval_ms = 10
	DefaultCheckpointSyncIntervalNs = 250_000_000 // lazy checkpoint durability
	DefaultSegmentRotateBytes       = 1 << 20
	DefaultSegmentBytesMax          = 64 << 20
	DefaultStagedBytesMax           = 64 << 20
	DefaultReadRetriesMax           = 8
	DefaultRecoveryReadBytes        = 4 << 20
	DefaultPreallocBytes            = 256 << 10
)

func (c Config) withDefaults() Config {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	def(&c.SyncBackstopNs, DefaultSyncBackstopNs)
	def(&c.CheckpointSyncIntervalNs, DefaultCheckpointSyncIntervalNs)
	def(&c.SegmentRotateBytes, DefaultSegmentRotateBytes)
	def(&c.SegmentBytesMax, DefaultSegmentBytesMax)
	defInt(&c.StagedBytesMax, DefaultStagedBytesMax)
	defInt(&c.ReadRetriesMax, DefaultReadRetriesMax)
	defInt(&c.RecoveryReadBytes, DefaultRecoveryReadBytes)
	if c.PreallocBytes == 0 {
		c.PreallocBytes = DefaultPreallocBytes
	}
	if c.RecoveryReadBytes < FrameBytesMax {
		c.RecoveryReadBytes = FrameBytesMax
	}
	return c
}

// Errors an append can be answered with.
var (
	// ErrFailed: the WAL hit an I/O error and refuses appends until the node restarts.
	// An append answered with it may or may not be durable (a retry may duplicate).
	ErrFailed = errors.New("wal: failed")
	// ErrNotReady: the WAL has not finished recovery.
	ErrNotReady = errors.New("wal: not ready")
	// ErrFull: the group-commit staging area is at StagedBytesMax; retry later.
	ErrFull = errors.New("wal: staging area full")
	// ErrNoSpace: the device is full; a group write waits for space, and appends are
	// refused meanwhile (nothing of theirs was written). Retry later.
	ErrNoSpace = errors.New("wal: no space left on the device")
)

// AppendDone answers one append. Err is nil exactly when the record is durable.
type AppendDone struct {
	Token uint64
	Seq   uint64
	Err   error
}

// Recovery is reported once, when Open finishes.
type Recovery struct {
	Checkpoint  uint64   // first seq not yet dispatched, as recovered
	Skip        Skip     // records at or above Checkpoint already dispatched (zero: none known)
	NextSeq     uint64   // seq the next append gets
	Records     []Record // every CRC-valid record at or above Checkpoint, in seq order
	Decisions   []string // the recovery table rows taken, in order (for logs and tests)
	CorruptSkip int      // mid-log frames that failed their CRC and were skipped
}

// Ready is the output of the machine since the last call to Ready.
//
// Order: every Op may be issued at once, in any order; the machine has already waited for
// whatever an op depends on. Every AppendDone may be delivered at once: its record is
// durable (or it reports an error). Recovered is set once; Failed is set once, when the
// WAL turns sticky-failed.
type Ready struct {
	Ops       []disk.Op
	Done      []AppendDone
	Recovered *Recovery
	Failed    error
}

type opPurpose uint8

const (
	purposeRecover opPurpose = iota + 1
	purposeWrite
	purposeCut // cutting back a group write that failed for lack of space
	purposeSync
	purposeVerify
	purposeRotate
	purposeCheckpoint
	purposeCompact
)

type segment struct {
	name     string
	firstSeq uint64 // from the name: no record in it is below this
	size     int64
	zeroEnd  int64 // end of the zeros this process wrote past size (prealloc.go); 0: none
}

type waiter struct {
	token uint64
	seq   uint64
}

type state uint8

const (
	stateNew state = iota
	stateRecovering
	stateReady
	stateFailed
)

// fail turns the WAL sticky-failed: every waiting and later append is answered ErrFailed.
func (l *Log) fail(cause error) {
	if l.state == stateFailed {
		return
	}
	l.state = stateFailed
	l.failure = fmt.Errorf("%w: %w", ErrFailed, cause)
	l.out.Failed = l.failure
	for _, w := range l.inflight {
		l.out.Done = append(l.out.Done, AppendDone{Token: w.token, Seq: w.seq, Err: l.failure})
	}
	for _, w := range l.staged {
		l.out.Done = append(l.out.Done, AppendDone{Token: w.token, Seq: w.seq, Err: l.failure})
	}
	l.inflight, l.staged = nil, nil
	l.stagedBuf = l.stagedBuf[:0]
}
