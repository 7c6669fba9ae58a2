package lease

import (
	"slices"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// pendingSlack is how far the pending list may grow past twice the acked set before the
// offsets the floor already covers are dropped from it (Ack, trimPending).
const pendingSlack = 256

// compactPhase is the step of the snapshot sequence in flight (doc.go, Compaction).
type compactPhase uint8

const (
	compactNone        compactPhase = iota
	compactCreateTmp                // create acks.snap.tmp
	compactWriteTmp                 // write the snapshot into it
	compactSyncTmp                  // fdatasync it
	compactRename                   // rename it to acks.snap
	compactSyncDirSnap              // make the rename durable: the snapshot holds every ack it encoded
	compactCreateLog                // replace acks.log by an empty file
	compactSyncDirLog               // make that durable before any frame is written to it
)

// maybeFlush writes the pending acks when their flush time came (or a full frame waits),
// the log is idle and persistence has not failed: one write, then one fdatasync. A flush
// that is due goes out even when trimming left no offset in the pending list: the frame
// still carries the floor, which covers them.
func (m *Manager) maybeFlush(nowNs int64) {
	if !m.ready || m.failure != nil || m.persist != persistIdle ||
		len(m.pending) == 0 && m.flushAtNs == 0 {
		return
	}
	if nowNs < m.flushAtNs && len(m.pending) < FrameOffsetsMax {
		return
	}
	if mutAcksNotDurable { // the bug: a flush that writes nothing and reports the acks durable
		m.pending, m.flushAtNs, m.stats.AcksDurable = m.pending[:0], 0, m.stats.Acks
		return
	}
	floor := m.acked.floor
	m.trimPending()
	buf := m.spareBuf[:0]
	m.spareBuf = nil
	rest := m.pending
	for first := true; first || len(rest) > 0; first = false { // one frame per FrameOffsetsMax acks
		n := min(len(rest), FrameOffsetsMax)
		buf = AppendAckFrameFor(buf, m.cfg.Dir, floor, rest[:n])
		rest = rest[n:]
	}
	m.pending = m.pending[:0]
	m.flushAtNs = 0
	m.flushAcks = m.stats.Acks
	m.flushBuf = buf
	m.persist = persistWriting
	m.issue(
		purposeFlush,
		disk.Op{Kind: disk.KindWriteAt, Name: m.path(LogFile), Off: m.logSize, Data: buf},
	)
	m.logSize += int64(len(buf))
}

// trimPending drops the pending offsets the floor covers and sorts the rest. Every offset
// left is in the acked set, so afterwards len(pending) <= acked.count.
func (m *Manager) trimPending() {
	floor := m.acked.floor
	m.pending = slices.DeleteFunc(m.pending, func(o uint64) bool { return o < floor })
	slices.Sort(m.pending)
	assert.That(len(m.pending) <= m.acked.count, "lease: pending acks not in the acked set")
}

func (m *Manager) onFlushStep(nowNs int64, res disk.Result) {
	if res.Err != nil {
		m.fail(res.Err)
		return
	}
	switch res.Kind {
	case disk.KindWriteAt:
		assert.That(m.persist == persistWriting, "lease: flush write completed while not writing")
		m.persist = persistSyncing
		m.issue(purposeFlush, disk.Op{Kind: disk.KindSync, Name: m.path(LogFile)})
	case disk.KindSync:
		assert.That(m.persist == persistSyncing, "lease: flush sync completed while not syncing")
		assert.That(m.flushAcks >= m.stats.AcksDurable, "lease: durable acks moved backwards")
		m.stats.AcksDurable = m.flushAcks
		m.stats.Flushes++
		m.spareBuf, m.flushBuf = m.flushBuf[:0], nil
		m.persist = persistIdle
		m.maybeCompact(false)
		m.maybeFlush(nowNs)
	}
}

// maybeCompact starts the snapshot sequence when acks.log has passed LogBytesMax (or
// force: recovery skipped damage) and nothing is in flight. Flushes wait until the fresh
// log is durable.
func (m *Manager) maybeCompact(force bool) {
	if !m.ready || m.failure != nil || m.persist != persistIdle ||
		m.logSize < m.cfg.LogBytesMax && !force {
		return
	}
	m.persist = persistCompacting
	m.snapBuf = encodeSnapshot(m.acked, m.cfg.Dir) // every ack so far, the pending ones included
	m.compactAcks = m.stats.Acks
	m.pending = m.pending[:0]
	m.flushAtNs = 0
	m.compactStep(compactCreateTmp)
}

// compactStep issues the op of phase p.
func (m *Manager) compactStep(p compactPhase) {
	m.compact = p
	op := disk.Op{Name: m.path(SnapTmpFile)}
	switch p {
	case compactCreateTmp:
		op.Kind = disk.KindCreate
	case compactWriteTmp:
		op.Kind, op.Data = disk.KindWriteAt, m.snapBuf
	case compactSyncTmp:
		op.Kind = disk.KindSync
	case compactRename:
		op.Kind, op.NewName = disk.KindRename, m.path(SnapFile)
	case compactSyncDirSnap, compactSyncDirLog:
		op.Kind, op.Name = disk.KindSyncDir, m.cfg.Dir
	case compactCreateLog:
		op.Kind, op.Name = disk.KindCreate, m.path(LogFile)
	default:
		assert.That(false, "lease: unknown compaction phase")
	}
	m.issue(purposeCompact, op)
}

func (m *Manager) onCompactStep(nowNs int64, res disk.Result) {
	assert.That(m.persist == persistCompacting, "lease: compaction step while not compacting")
	if res.Err != nil {
		m.fail(res.Err)
		return
	}
	switch m.compact {
	case compactSyncDirSnap:
		// acks.snap is durable and holds every ack the old log holds, and more.
		assert.That(m.compactAcks >= m.stats.AcksDurable, "lease: durable acks moved backwards")
		m.stats.AcksDurable = m.compactAcks
		m.stats.Compactions++
		m.snapBuf = nil
	case compactSyncDirLog:
		m.compact = compactNone
		m.logSize = 0
		m.persist = persistIdle
		m.maybeFlush(nowNs)
		return
	}
	m.compactStep(m.compact + 1)
}

// observe takes the clock reading of a call. The clock is the machine's wall clock, which
// can be stepped back (DESIGN.md section 4). A flush deadline set before a step back
// would wait the step's size on top of its interval, and every ack answered meanwhile
// would join its batch: a crash then loses acks answered long before it (cluster seed
// 983: a 562 ms step, an ack lost 137 ms after its answer; a one-hour step would keep an
// hour of acks in memory). So a reading below the last one moves the pending deadline back
// by as much: the batch waits what was left of its interval at the last reading before the
// step, plus the time between that reading and the next (doc.go, Persistence). A step
// forward only brings the flush forward. Lease deadlines stay on the clock.
func (m *Manager) observe(nowNs int64) {
	if back := m.lastNowNs - nowNs; back > 0 && m.flushAtNs != 0 {
		m.flushAtNs = max(1, m.flushAtNs-back) // 0 would mean nothing pending
	}
	m.lastNowNs = nowNs
}
