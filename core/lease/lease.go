package lease

import (
	"errors"
	"fmt"
	"slices"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
)

// Config holds a partition's lease settings. Zero fields take the defaults below.
type Config struct {
	Dir                 string // directory of acks.log and acks.snap, e.g. "acks/000000000000002a-3"
	VisibilityTimeoutNs int64  // how long a lease holds a record
	MaxInFlight         int    // leases held at once; a consume at the cap gets nothing
	AckFlushIntervalNs  int64  // an ack is written at most this much later (plus a compaction)
	AckWindowMax        int    // only offsets below floor + this are leased (clamped to AckSpanMax)
	LogBytesMax         int64  // past this, acks.log is compacted into acks.snap
	ReadRetriesMax      int    // re-reads of a failed read or a damaged frame during recovery
	RecoveryReadBytes   int    // bytes per recovery read
}

// Defaults. The first three are the topic defaults of API.md.
const (
	DefaultDir                 = "acks"
	DefaultVisibilityTimeoutNs = 30_000_000_000
	DefaultMaxInFlight         = 1024
	DefaultAckFlushIntervalNs  = 200_000_000
	DefaultAckWindowMax        = 1 << 20
	DefaultLogBytesMax         = 1 << 20
	DefaultReadRetriesMax      = 8
	DefaultRecoveryReadBytes   = 256 << 10
	// RecoveryBytesMax bounds a file recovery reads into memory. Within the package's
	// bounds acks.log stays under LogBytesMax plus one flush (at most AckWindowMax acks)
	// and acks.snap under 8 MiB; a larger file fails recovery.
	RecoveryBytesMax = 256 << 20
)

func (c Config) withDefaults() Config {
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.VisibilityTimeoutNs <= 0 {
		c.VisibilityTimeoutNs = DefaultVisibilityTimeoutNs
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.AckFlushIntervalNs <= 0 {
		c.AckFlushIntervalNs = DefaultAckFlushIntervalNs
	}
	if c.AckWindowMax <= 0 {
		c.AckWindowMax = DefaultAckWindowMax
	}
	c.AckWindowMax = min(c.AckWindowMax, AckSpanMax)
	if c.LogBytesMax <= 0 {
		c.LogBytesMax = DefaultLogBytesMax
	}
	if c.ReadRetriesMax <= 0 {
		c.ReadRetriesMax = DefaultReadRetriesMax
	}
	if c.RecoveryReadBytes <= 0 {
		c.RecoveryReadBytes = DefaultRecoveryReadBytes
	}
	return c
}

// File names within Config.Dir.
const (
	LogFile     = "acks.log"
	SnapFile    = "acks.snap"
	SnapTmpFile = "acks.snap.tmp"
)

// Errors.
var (
	// ErrGone: the receipt no longer names a lease (API 410): it expired, was acked or
	// nacked, the record was leased again to someone else, or retention removed it.
	ErrGone = errors.New("lease: gone")
	// ErrNotReady: recovery has not finished.
	ErrNotReady = errors.New("lease: not ready")
	// ErrFailed wraps the I/O error that stopped ack persistence (see doc.go).
	ErrFailed = errors.New("lease: ack persistence failed")
)

// Receipt is one lease handed to a consumer.
type Receipt struct {
	Offset     uint64
	Nonce      uint64 // random: a receipt cannot be guessed
	DeadlineNs int64  // the lease expires at this time
	Deliveries uint32 // leases of this offset since recovery, this one included
}

// Recovery is reported once, when Open finishes.
type Recovery struct {
	AckFloor  uint64   // every offset below is acked (or removed by retention)
	Acked     int      // acked offsets above the floor
	Decisions []string // the recovery table rows taken, in order (doc.go)
}

// Ready is the output of the machine since the last call to Ready.
//
// Every Op may be issued at once, in any order: the machine issues an op only after the
// ops it depends on completed (write before sync, sync before rename, rename durable
// before the log is replaced). Recovered is set once; Failed is set once, when ack
// persistence turns sticky-failed (or recovery fails).
type Ready struct {
	Ops       []disk.Op
	Recovered *Recovery
	Failed    error
}

// Stats counts what the manager holds and did.
type Stats struct {
	InFlight        int    // leases held now
	Released        int    // nacked or expired offsets waiting to be leased again
	AckFloor        uint64 // every offset below is acked (or removed by retention)
	AckedAboveFloor int    // acked offsets above the floor
	Leases          uint64 // receipts handed out
	Redeliveries    uint64 // receipts for an offset leased before (since recovery)
	Acks            uint64 // acks accepted, in order; see AcksDurable
	Nacks           uint64
	Extends         uint64
	Expiries        uint64
	Gone            uint64 // Ack, Nack or Extend answered ErrGone
	AcksDurable     uint64 // the first AcksDurable acks accepted are durable
	Flushes         uint64 // ack-log writes whose fdatasync succeeded
	Compactions     uint64 // snapshots made durable
	LogBytes        int64  // size of acks.log
}

type opPurpose uint8

const (
	purposeRecover opPurpose = iota + 1
	purposeFlush
	purposeCompact
)

// persistState is what the ack log is doing. At most one of these is in flight.
type persistState uint8

const (
	persistIdle       persistState = iota
	persistWriting                 // a flush's write is in flight
	persistSyncing                 // its fdatasync is in flight
	persistCompacting              // the snapshot sequence (persist.go) is in flight
)

// Manager is the consume leases of one partition: a deterministic state machine.
// See doc.go for how it is driven.
type Manager struct {
	cfg     Config
	rand    *rng.Rand
	ready   bool  // recovery finished
	failure error // sticky: nothing more is persisted
	out     Ready

	nextOpID uint64
	ops      map[uint64]opPurpose // ops in flight and what they are for

	hw       uint64 // offsets below are committed and may be leased
	oldest   uint64 // retention removed every offset below
	cursor   uint64 // lowest offset not leased since recovery (acked ones are skipped)
	acked    *ackSet
	leases   map[uint64]*lease // offset -> lease
	byExpiry deadlineHeap
	released releasedHeap

	// Persistence of acks (persist.go).
	persist     persistState
	pending     []uint64 // offsets acked since the last flush began, in ack order
	flushAtNs   int64    // when the pending acks are written; 0 = nothing pending
	lastNowNs   int64    // the latest clock reading given (observe)
	flushBuf    []byte   // the write in flight; the core does not touch it until its Result
	spareBuf    []byte
	flushAcks   uint64 // Stats.Acks when the write in flight was encoded
	compact     compactPhase
	snapBuf     []byte // the snapshot being written
	compactAcks uint64 // Stats.Acks when the snapshot was encoded
	logSize     int64  // bytes of acks.log, including the write in flight

	stats Stats
	rec   *recovery
}

// New returns a manager that does nothing until Open. r draws the receipts' nonces; give
// each manager its own stream (rng.Rand.Fork).
func New(cfg Config, r *rng.Rand) *Manager {
	assert.That(r != nil, "lease: New without a random source")
	return &Manager{
		cfg:    cfg.withDefaults(),
		rand:   r,
		ops:    make(map[uint64]opPurpose),
		leases: make(map[uint64]*lease),
		acked:  newAckSet(0),
	}
}

// Ready returns the actions produced since the last call and clears them.
func (m *Manager) Ready() Ready {
	r := m.out
	m.out = Ready{}
	return r
}

// Failed returns the sticky failure, or nil.
func (m *Manager) Failed() error { return m.failure }

// NextDeadline is the time at which the driver must call Tick, if any: the earliest lease
// deadline or the pending ack flush.
func (m *Manager) NextDeadline() (int64, bool) {
	if !m.ready {
		return 0, false
	}
	var at int64
	ok := false
	if len(m.byExpiry) > 0 {
		at, ok = m.byExpiry[0].deadlineNs, true
	}
	if m.flushAtNs != 0 && m.failure == nil && m.persist == persistIdle && (!ok || m.flushAtNs < at) {
		at, ok = m.flushAtNs, true
	}
	return at, ok
}

// Tick expires the leases whose deadline passed and writes the pending acks when due.
func (m *Manager) Tick(nowNs int64) {
	m.observe(nowNs)
	if !m.ready {
		return
	}
	m.expire(nowNs)
	m.maybeFlush(nowNs)
}

// DiskDone feeds the completion of an op this machine issued.
func (m *Manager) DiskDone(nowNs int64, res disk.Result) {
	m.observe(nowNs)
	purpose, ok := m.ops[res.ID]
	assert.That(ok, "lease: completion of an unknown op")
	delete(m.ops, res.ID)
	if m.failure != nil {
		return // nothing issued before the failure changes what was promised
	}
	switch purpose {
	case purposeRecover:
		m.recoverStep(res)
	case purposeFlush:
		m.onFlushStep(nowNs, res)
	case purposeCompact:
		m.onCompactStep(nowNs, res)
	}
}

// Flush writes the pending acks now instead of at their flush time (clean shutdown).
func (m *Manager) Flush(nowNs int64) {
	m.observe(nowNs)
	if (len(m.pending) > 0 || m.flushAtNs != 0) && (m.flushAtNs == 0 || m.flushAtNs > nowNs) {
		m.flushAtNs = nowNs
	}
	m.maybeFlush(nowNs)
}

// Flushed reports whether every ack accepted is durable (or persistence failed, and no
// flush will ever come).
func (m *Manager) Flushed() bool { return m.stats.AcksDurable == m.stats.Acks || m.failure != nil }

// SetHighWatermark says every offset below hw is committed and may be leased. It may be
// called before recovery finishes; it never moves backwards (DESIGN.md invariant 4).
func (m *Manager) SetHighWatermark(hw uint64) {
	assert.That(hw >= m.hw, "lease: high-watermark moved backwards")
	m.hw = hw
}

// SetOldest says retention removed every offset below o: their leases, releases and acks
// are dropped and the floor moves up to o. It may be called before recovery finishes.
// Dropping leases costs O(InFlight log InFlight), paid only when retention removes records
// that are not all acked.
func (m *Manager) SetOldest(o uint64) {
	if o <= m.oldest {
		return
	}
	m.oldest = o
	if !m.ready || o <= m.acked.floor {
		return // below the floor nothing is held; before recovery, applied when it ends
	}
	var gone []uint64
	for off := range m.leases { //narad:unordered (collected, then sorted)
		if off < o {
			gone = append(gone, off)
		}
	}
	slices.Sort(gone)
	for _, off := range gone {
		m.dropLease(m.leases[off])
	}
	for len(m.released) > 0 && m.released[0].offset < o {
		m.released.pop()
	}
	m.acked.raiseFloor(o)
	m.cursor = max(m.cursor, m.acked.floor)
}

// SetVisibilityTimeout sets the lease time of later leases and extends (0: the default).
func (m *Manager) SetVisibilityTimeout(ns int64) {
	if ns <= 0 {
		ns = DefaultVisibilityTimeoutNs
	}
	m.cfg.VisibilityTimeoutNs = ns
}

// SetMaxInFlight sets the cap on leases held at once (0: the default). Leases held over a
// lowered cap stay until they end; no new one is given until the count is under it.
func (m *Manager) SetMaxInFlight(n int) {
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	m.cfg.MaxInFlight = n
}

// InFlight is the number of leases held.
func (m *Manager) InFlight() int { return len(m.leases) }

// AckFloor is the lowest offset not acked: every offset below is acked (or removed).
func (m *Manager) AckFloor() uint64 { return m.acked.floor }

// Acked reports whether offset is acked, in memory, or below the floor (which retention
// also raises). After recovery it is what the ack files hold.
func (m *Manager) Acked(offset uint64) bool { return m.acked.has(offset) }

// Stats returns the counters and sizes.
func (m *Manager) Stats() Stats {
	s := m.stats
	s.InFlight = len(m.leases)
	s.Released = len(m.released)
	s.AckFloor = m.acked.floor
	s.AckedAboveFloor = m.acked.count
	s.LogBytes = m.logSize
	return s
}

func (m *Manager) issue(p opPurpose, op disk.Op) {
	m.nextOpID++
	op.ID = m.nextOpID
	m.ops[op.ID] = p
	m.out.Ops = append(m.out.Ops, op)
}

func (m *Manager) path(file string) string { return m.cfg.Dir + "/" + file }

// fail turns persistence sticky-failed. Leases and acks keep working in memory; nothing
// more is written, and the node restarts to recover from what is on disk (doc.go).
func (m *Manager) fail(cause error) {
	if m.failure != nil {
		return
	}
	m.failure = fmt.Errorf("%w: %v", ErrFailed, cause)
	m.out.Failed = m.failure
	m.pending = nil
	m.flushAtNs = 0
	m.flushBuf, m.snapBuf = nil, nil
	m.persist = persistIdle
}
