package meta

import (
	"fmt"
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// Config holds the store's tunables. Zero fields take the defaults below.
type Config struct {
	Dir                  string // directory of raft.log and snap, default "meta"
	TickIntervalNs       int64  // one raft tick, default 100 ms
	SnapshotEveryEntries uint64 // applied entries between snapshots, default 1,000
	// ID is this replica's raft id, default DefaultID; never 0.
	ID uint64
	// Voters is the initial configuration a fresh store bootstraps (every initial member
	// must be given the same list); default just ID. A store that recovered anything
	// ignores it: the configuration lives in the log and the snapshot.
	Voters []uint64
	// OnApply, when set, is called after each entry is applied and after a snapshot from
	// the leader is installed, with the index and term the state is now at (the simulator
	// compares replicas with it). Nil in production.
	OnApply func(index, term uint64)
	// DeadAfterNs: the leader marks a member dead after this long without a heartbeat;
	// default DefaultDeadAfterNs.
	DeadAfterNs int64
	// ReadContextBase numbers this process's barriers (their raft read request contexts)
	// from ReadContextBase+1. It must differ between the processes of a replica (the node
	// layer draws it at random): the network may deliver the answer to an earlier
	// process's read request after a restart, and raft hands it over as a ReadState
	// whatever it is; with the same numbers it would confirm a barrier of this process at
	// the earlier process's (lower) index.
	ReadContextBase uint64
	// Rebalance turns on the controller's move duty (rebalance_control.go): the leader
	// drains draining members and evens out the partitions after a join, a leader change
	// and a request. Off (the metastore simulator, whose clients drive moves): nothing
	// proposes moves but the clients.
	Rebalance bool
}

// Defaults and bounds.
const (
	DefaultDir                  = "meta"
	DefaultTickIntervalNs       = 100_000_000
	DefaultSnapshotEveryEntries = 1000
	// SnapshotEveryEntriesMax bounds the log between snapshots, and so what recovery reads.
	SnapshotEveryEntriesMax = 100_000

	// DefaultID is the raft id of a single node's replica.
	DefaultID uint64 = 1
	// ElectionTicks and HeartbeatTicks are raft's timeouts, in ticks.
	ElectionTicks  = 10
	HeartbeatTicks = 1

	ProposalsMax = 1024 // proposals waiting for their entry to apply; more is ErrBusy
	BarriersMax  = 1024 // barriers waiting; more is ErrBusy
	// RequestTimeoutTicks: a proposal or barrier unanswered for this many ticks is answered
	// ErrTimeout (its outcome is unknown). One voter only reaches it when the disk hangs.
	RequestTimeoutTicks = 100
	// TicksPerCallMax bounds the raft ticks one Tick call performs after a long pause.
	TicksPerCallMax = 2 * RequestTimeoutTicks
	// ReadysPerCallMax bounds the raft Readys handled without the disk in one call; the
	// rest wait for the next event (at the latest the next tick).
	ReadysPerCallMax = 64

	ReadRetriesMax = 8       // re-reads of a file that fails its check during recovery
	ReadChunkBytes = 1 << 20 // bytes per recovery read
	// LogBytesMax bounds raft.log at recovery; a larger file fails recovery.
	LogBytesMax = 1 << 30

	// Files in Dir.
	LogFile     = "raft.log"
	LogTmpFile  = "raft.log.tmp"
	SnapFile    = "snap"
	SnapTmpFile = "snap.tmp"
)

func (c Config) withDefaults() Config {
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.TickIntervalNs <= 0 {
		c.TickIntervalNs = DefaultTickIntervalNs
	}
	if c.SnapshotEveryEntries == 0 {
		c.SnapshotEveryEntries = DefaultSnapshotEveryEntries
	}
	c.SnapshotEveryEntries = min(c.SnapshotEveryEntries, SnapshotEveryEntriesMax)
	if c.ID == 0 {
		c.ID = DefaultID
	}
	if c.DeadAfterNs <= 0 {
		c.DeadAfterNs = DefaultDeadAfterNs
	}
	if len(c.Voters) == 0 {
		c.Voters = []uint64{c.ID}
	}
	c.Voters = slices.Clone(c.Voters)
	slices.Sort(c.Voters)
	c.Voters = slices.Compact(c.Voters)
	return c
}

// ProposeDone answers one Propose. Err is nil exactly when the command's entry is
// committed and applied on this replica; Topic is then the topic it created, changed or
// deleted (User the user, for a user command). With ErrExists, Topic is the topic that
// exists.
type ProposeDone struct {
	Token uint64
	Topic Topic
	User  User
	Err   error
}

// BarrierDone answers one Barrier. Err is nil once this replica has applied every entry
// committed when the leader confirmed the barrier: a read of the local replica made after
// it sees every write answered before the barrier was asked.
type BarrierDone struct {
	Token uint64
	Err   error
}

// Recovery is reported once, when Open finishes.
type Recovery struct {
	SnapshotIndex uint64   // index of the snapshot the state started from, 0 for none
	CommitIndex   uint64   // commit index recovered
	LastIndex     uint64   // last raft index in the log
	AppliedIndex  uint64   // index applied when Recovered was reported
	Term          uint64   // raft term recovered
	Topics        int      // topics after re-applying the committed entries
	Decisions     []string // the recovery table rows taken, in order (doc.go)
}

// Ready is the output of the store since the last call to Ready.
//
// Order: every Op may be issued at once, in any order: the store has already waited for
// what an op depends on. Every Done and Barrier may be delivered at once. Messages go to
// the raft peers named in their To field; the log state they depend on is already durable.
// Recovered is set once; Failed is set once, when the store turns sticky-failed.
type Ready struct {
	Ops       []disk.Op
	Done      []ProposeDone
	Barriers  []BarrierDone
	Messages  []*raftpb.Message // to the peers in their To field; none with one voter
	Recovered *Recovery
	Failed    error
}

type state uint8

const (
	stateNew state = iota
	stateRecovering
	stateReady
	stateFailed
)

// phase says what the disk pipeline is doing. At most one of these is in flight.
type phase uint8

const (
	phaseIdle     phase = iota
	phaseWrite          // a Ready's frame is being written to raft.log
	phaseSync           // ... and fdatasynced
	phaseVerify         // ... and read back
	phaseSnapshot       // the snapshot and log rewrite sequence (snapshot.go)
	phaseRewrite        // a log rewrite (after a snapshot, or at the end of recovery)
)

type opPurpose uint8

const (
	purposeRecover opPurpose = iota + 1
	purposeReady
	purposeSnapshot
	purposeRewrite
)

type proposal struct {
	token    uint64
	term     uint64 // the entry is ours only if it carries this term
	deadline uint64 // tick count at which it times out
	refused  error  // a forward's guard refusal, answered once its entry applied (forwards.go)
}

type barrier struct {
	token    uint64
	deadline uint64
	index    uint64 // the read index, once the leader confirmed it
	hasIndex bool
}

// Store is the metastore replica: an etcd raft RawNode, its log and snapshot on disk, and
// the topics it applies. A deterministic state machine; see doc.go for how it is driven.
type Store struct {
	cfg     Config
	state   state
	failure error
	out     Ready

	nextOpID uint64
	ops      map[uint64]opPurpose // ops in flight and what they are for

	rn        *raft.RawNode
	ms        *raft.MemoryStorage // the persisted log: only what is durable goes in
	confState *raftpb.ConfState
	hs        hardState // durable HardState
	logSize   int64     // bytes of raft.log

	phase   phase
	rd      raft.Ready // the Ready being persisted
	rdFrame []byte

	sm           *machine
	applied      uint64
	earlyApplied uint64 // the applyearly mutation only: the last index applied before its commit
	appliedTerm  uint64
	snapIndex    uint64
	topicDeletes uint64 // TopicDeletes

	nextSeq    uint64 // proposals
	nextReadID uint64 // barriers
	proposals  map[uint64]*proposal
	barriers   map[uint64]*barrier
	campaigned bool

	ticks      uint64
	lastTickNs int64

	heard         map[uint64]heard   // node -> when the leader last heard it, and its address
	leaderSinceNs int64              // when this replica became leader, 0 when it is not
	controlUntil  map[uint64]uint64  // member -> tick until which its liveness change is pending
	moveUntil     map[moveKey]uint64 // partition -> tick until which its move command is pending
	rebalance     bool               // a rebalance is wanted (rebalance_control.go)
	learnerUntil  map[uint64]uint64  // member -> tick until which its learner change is pending
	promoteUntil  uint64             // tick until which a promotion is pending

	job    *snapJob
	rw     *rewriteJob
	verify *readBack // the read-back in flight, if any
	rec    *recovery
}

// New returns a store that does nothing until Open.
func New(cfg Config) *Store {
	return &Store{
		cfg: cfg.withDefaults(), ops: map[uint64]opPurpose{}, sm: newMachine(),
		proposals: map[uint64]*proposal{}, barriers: map[uint64]*barrier{},
		heard: map[uint64]heard{}, controlUntil: map[uint64]uint64{}, learnerUntil: map[uint64]uint64{},
		moveUntil:  map[moveKey]uint64{},
		nextReadID: cfg.ReadContextBase,
	}
}

// Ready returns the actions produced since the last call and clears them.
func (s *Store) Ready() Ready {
	r := s.out
	s.out = Ready{}
	return r
}

// NextDeadline is the time at which the driver must call Tick, if any.
func (s *Store) NextDeadline() (int64, bool) {
	if s.state != stateReady {
		return 0, false
	}
	return s.lastTickNs + s.cfg.TickIntervalNs, true
}

// Tick advances raft's clock by one tick per TickIntervalNs elapsed since the last tick
// (at most TicksPerCallMax), then times out requests waiting too long.
func (s *Store) Tick(nowNs int64) {
	if s.state != stateReady {
		return
	}
	n := (nowNs - s.lastTickNs) / s.cfg.TickIntervalNs
	if n <= 0 {
		return
	}
	if n > TicksPerCallMax {
		n, s.lastTickNs = TicksPerCallMax, nowNs
	} else {
		s.lastTickNs += n * s.cfg.TickIntervalNs
	}
	for range n {
		s.rn.Tick()
		s.ticks++
	}
	s.expire()
	s.control(nowNs)
	s.drive()
}

// expire answers ErrTimeout to the requests whose deadline passed, in seq order.
func (s *Store) expire() {
	for _, seq := range slices.Sorted(maps.Keys(s.proposals)) {
		if p := s.proposals[seq]; p.deadline <= s.ticks {
			delete(s.proposals, seq)
			s.answer(p.token, result{}, ErrTimeout)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.barriers)) {
		if b := s.barriers[id]; b.deadline <= s.ticks {
			delete(s.barriers, id)
			s.answerBarrier(b.token, ErrTimeout)
		}
	}
}

// DiskDone feeds the completion of an op this store issued.
func (s *Store) DiskDone(nowNs int64, res disk.Result) {
	purpose, ok := s.ops[res.ID]
	assert.That(ok, "meta: completion of an unknown op")
	delete(s.ops, res.ID)
	if s.state == stateFailed {
		return // nothing issued before the failure can change the answers given
	}
	switch purpose {
	case purposeRecover:
		s.recoverStep(res)
	case purposeReady:
		s.onReadyStep(res)
	case purposeSnapshot:
		s.onSnapshotStep(res)
	case purposeRewrite:
		s.onRewriteStep(nowNs, res)
	}
	s.drive()
}

// Failed returns the sticky failure, or nil.
func (s *Store) Failed() error { return s.failure }

// Leader reports whether this replica is the raft leader.
func (s *Store) Leader() bool {
	return s.state == stateReady && s.rn.BasicStatus().RaftState == raft.StateLeader
}

// AppliedIndex is the raft index of the last entry applied to the topics.
func (s *Store) AppliedIndex() uint64 { return s.applied }

// DurableCommit is the commit index this replica holds durable, at least the applied
// index: a forward names it (ProposalID.Commit). A later process of the replica recovers
// at least it.
func (s *Store) DurableCommit() uint64 { return max(s.applied, s.hs.Commit) }

// CaughtUp reports whether the replica knows a leader and has applied every entry it
// knows to be committed (API.md /readyz).
func (s *Store) CaughtUp() bool {
	if s.state != stateReady {
		return false
	}
	st := s.rn.BasicStatus()
	return st.Lead != raft.None && s.applied >= st.GetCommit()
}

// TopicDeletes counts the topic deletes this replica applied (a snapshot installed counts
// as one): a change tells that incarnations may have gone.
func (s *Store) TopicDeletes() uint64 { return s.topicDeletes }

// Deleted reports whether the incarnation id is gone for good on this replica: it was
// created at or below the applied index (ids are creation indexes) and is not held.
func (s *Store) Deleted(id uint64) bool {
	_, held := s.sm.byID[id]
	return id != 0 && id <= s.applied && !held
}

// Topic returns the topic called name on the local replica.
func (s *Store) Topic(name string) (Topic, bool) {
	t, ok := s.sm.byName[name]
	return t, ok
}

// TopicByID returns the topic with incarnation id on the local replica.
func (s *Store) TopicByID(id uint64) (Topic, bool) {
	name, ok := s.sm.byID[id]
	if !ok {
		return Topic{}, false
	}
	return s.sm.byName[name], true
}

// Topics returns every topic on the local replica, sorted by name.
func (s *Store) Topics() []Topic {
	out := make([]Topic, 0, len(s.sm.byName))
	for _, name := range slices.Sorted(maps.Keys(s.sm.byName)) {
		out = append(out, s.sm.byName[name])
	}
	return out
}

func (s *Store) issue(p opPurpose, op disk.Op) {
	s.nextOpID++
	op.ID = s.nextOpID
	s.ops[op.ID] = p
	s.out.Ops = append(s.out.Ops, op)
}

func (s *Store) path(name string) string { return s.cfg.Dir + "/" + name }

func (s *Store) answer(token uint64, r result, err error) {
	if token == 0 { // the store's own proposal (the controller's)
		return
	}
	s.out.Done = append(s.out.Done, ProposeDone{Token: token, Topic: r.Topic, User: r.User, Err: err})
}

func (s *Store) answerBarrier(token uint64, err error) {
	s.out.Barriers = append(s.out.Barriers, BarrierDone{Token: token, Err: err})
}

// fail turns the store sticky-failed: every waiting and later request is answered
// ErrFailed, no op completion is acted on, and the node must restart to recover.
func (s *Store) fail(cause error) {
	if s.state == stateFailed {
		return
	}
	s.state = stateFailed
	s.failure = fmt.Errorf("%w: %w", ErrFailed, cause)
	s.out.Failed = s.failure
	for _, seq := range slices.Sorted(maps.Keys(s.proposals)) {
		s.answer(s.proposals[seq].token, result{}, s.failure)
	}
	for _, id := range slices.Sorted(maps.Keys(s.barriers)) {
		s.answerBarrier(s.barriers[id].token, s.failure)
	}
	s.proposals, s.barriers = map[uint64]*proposal{}, map[uint64]*barrier{}
	s.job, s.rw, s.rec = nil, nil, nil
}

// discardLogger is raft's logger: the core prints nothing. Raft's panics still panic.
type discardLogger struct{}

func (discardLogger) Debug(...any)              {}
func (discardLogger) Debugf(string, ...any)     {}
func (discardLogger) Error(...any)              {}
func (discardLogger) Errorf(string, ...any)     {}
func (discardLogger) Info(...any)               {}
func (discardLogger) Infof(string, ...any)      {}
func (discardLogger) Warning(...any)            {}
func (discardLogger) Warningf(string, ...any)   {}
func (discardLogger) Fatal(v ...any)            { raftPanic(fmt.Sprint(v...)) }
func (discardLogger) Fatalf(f string, v ...any) { raftPanic(fmt.Sprintf(f, v...)) }
func (discardLogger) Panic(v ...any)            { raftPanic(fmt.Sprint(v...)) }
func (discardLogger) Panicf(f string, v ...any) { raftPanic(fmt.Sprintf(f, v...)) }

// raftPanic is raft's own assertion failing: its logger contract is to panic.
func raftPanic(msg string) {
	panic("raft: " + msg) //narad:panic
}
