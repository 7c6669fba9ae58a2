package dispatch

import (
	"fmt"

	"github.com/narad/narad/core/wal"
)

// Defaults, from the seed's table of compiled-in numbers (produce-path.md).
const (
	DefaultBaseWindow         = 4_096  // produceDispatchBaseWindow
	DefaultWindowMax          = 65_536 // defaultProduceDispatchBatchSize
	DefaultTargetPerPartition = 64     // produceDispatchTargetPerPartition
	DefaultLookaheadWindows   = 16     // produceDispatchLookaheadWindows
	DefaultFanoutMax          = 16     // defaultProduceDispatchCommitFanout
	DefaultCommitBytesMax     = 8 << 20
	DefaultFailureBackoffNs   = 1_000_000_000  // 1 s
	DefaultCommitTimeoutNs    = 30_000_000_000 // 30 s
	DefaultBacklogBytesMax    = 256 << 20
	// DefaultLingerNs: a partition's records wait at most this long for more to make a
	// fatter commit (within the seed's 10 ms idle poll, produceDispatchInterval).
	DefaultLingerNs = 5_000_000 // 5 ms
)

// Config holds the dispatcher's tunables; zero fields take the defaults.
type Config struct {
	BaseWindow         int
	WindowMax          int
	TargetPerPartition int
	LookaheadWindows   int
	FanoutMax          int   // commits in flight at once
	CommitBytesMax     int   // payload bytes of one commit (at least one record)
	FailureBackoffNs   int64 // a partition whose commit failed waits this long
	CommitTimeoutNs    int64 // a commit not answered by then counts as failed
	BacklogBytesMax    int   // Add refuses past this (the node answers 429)
	// LingerNs: a partition holding fewer than TargetPerPartition records waits up to this
	// long after the oldest of them arrived before it commits them; negative: never waits.
	LingerNs int64
	// OnReroute, when set, is told of every reroute: records of partition k moved to
	// partition to of the same incarnation (the simulators hold every record found off
	// its partition to such a move).
	OnReroute func(k Key, to uint32, records int)
	// OnCommitFailed, when set, is told of every commit that failed or timed out: its
	// records are sent again, and it may have been committed all the same (a duplicate
	// the simulators must find a cause for).
	OnCommitFailed func(k Key, recs []wal.Record)
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.BaseWindow, DefaultBaseWindow)
	def(&c.WindowMax, DefaultWindowMax)
	def(&c.TargetPerPartition, DefaultTargetPerPartition)
	def(&c.LookaheadWindows, DefaultLookaheadWindows)
	def(&c.FanoutMax, DefaultFanoutMax)
	def(&c.CommitBytesMax, DefaultCommitBytesMax)
	def(&c.BacklogBytesMax, DefaultBacklogBytesMax)
	if c.FailureBackoffNs <= 0 {
		c.FailureBackoffNs = DefaultFailureBackoffNs
	}
	if c.LingerNs == 0 {
		c.LingerNs = DefaultLingerNs
	}
	if c.CommitTimeoutNs <= 0 {
		c.CommitTimeoutNs = DefaultCommitTimeoutNs
	}
	return c
}

// Catalog is the dispatcher's read-only view of the local metastore replica.
type Catalog interface {
	// Topic returns the current incarnation id and partition count of a topic.
	Topic(name string) (id uint64, partitions uint32, ok bool)
	// CaughtUp reports whether the replica has applied everything it knows committed.
	CaughtUp() bool
	// Owner returns the member owning a partition of a topic incarnation, and whether
	// membership says that member is dead.
	Owner(incarnation uint64, partition uint32) (owner uint64, dead bool)
}

// Key names one partition of one topic incarnation: the unit of commit.
type Key struct {
	Topic       string
	Incarnation uint64
	Partition   uint32
}

// Commit asks the owner of a partition to commitDurable these records, in this order.
type Commit struct {
	ID      uint64
	Key     Key
	Records []wal.Record
}

// Ready is the dispatcher's output since the last call.
//
// Commits may be carried out at once and concurrently (never two for one Key). Barriers
// ask the metastore leader to confirm the local replica (ReadIndex); answer each with
// BarrierDone. Checkpoint, when non-zero, is the new first seq not yet dispatched: give it
// to the WAL (it only ever grows). Skip, when set, is the new description of the records
// above the checkpoint that are done: give it to the WAL (SetSkip) after the checkpoint.
type Ready struct {
	Commits    []Commit
	Barriers   []uint64
	Checkpoint uint64
	Skip       *wal.Skip
}

// ErrBacklogFull refuses a record when the backlog is at BacklogBytesMax.
var ErrBacklogFull = fmt.Errorf("dispatch: backlog full")

type status uint8

const (
	stWaiting  status = iota // admitted to its bucket, not in a commit
	stInflight               // in a commit not yet answered
	stDone                   // committed or discarded
	stParked                 // not admitted yet (past the lookahead horizon)
)

type entry struct {
	rec    wal.Record
	status status
}

// bucket is one partition's queue of admitted records, in seq order.
type bucket struct {
	key       Key
	ents      []*entry // the commit in flight (its first inflightN), then those waiting
	inflight  uint64   // commit id, 0 when none
	inflightN int      // records in that commit
	since     int64    // when the oldest record waiting (not in flight) arrived
	deadline  int64    // of the commit in flight
	notBefore int64    // backoff after a failure
	failures  int      // consecutive failed commits
	discard   bool     // the topic incarnation looks gone: confirm before discarding
	failedAt  int64    // when the owner last answered that the partition failed (0: not since
	//                    a success)
	failedOwner uint64 // the owner that answered it: a new owner (a forget) has not failed
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
