package lease

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

type recoveryPhase uint8

const (
	phaseList recoveryPhase = iota + 1
	phaseSnap
	phaseLog
	phaseFinish
)

// recovery is the state of Open: list the directory, read acks.snap, read and scan
// acks.log, then truncate a torn tail and create or remove what the table says.
type recovery struct {
	phase   recoveryPhase
	hasSnap bool
	hasTmp  bool
	hasLog  bool

	name        string // file being read
	buf         []byte // its bytes read so far, from offset 0 (at most RecoveryBytesMax)
	want        int    // length of the read in flight
	readErrs    int    // failed reads of the current chunk
	scanPos     int    // ack-log bytes before this are decided
	damageOff   int    // offset of the damaged frame being re-read, -1 for none
	damageReads int    // re-reads of that damage (or of the snapshot)
	resyncAt    int    // a valid frame after the damage, seen in any of its reads; -1 for none
	skipped     bool   // row L4 was taken: compact at once so the damage leaves the files
	frames      int    // valid ack-log frames applied

	set     *ackSet
	notes   []string
	truncAt int64 // the torn tail is cut here; -1 for none
	pending int   // finish-phase ops outstanding
	dirSync bool  // the finish phase changed directory entries: sync the directory
}

// Open starts recovery: Lease answers nothing and Ack ErrNotReady until Ready reports
// Recovered.
func (m *Manager) Open(nowNs int64) {
	assert.That(m.rec == nil && !m.ready && m.nextOpID == 0, "lease: Open called twice")
	m.observe(nowNs)
	m.rec = &recovery{phase: phaseList, damageOff: -1, resyncAt: -1, truncAt: -1, set: newAckSet(0)}
	m.issue(purposeRecover, disk.Op{Kind: disk.KindList, Name: m.cfg.Dir})
}

func (m *Manager) recoverStep(res disk.Result) {
	switch m.rec.phase {
	case phaseList:
		m.onList(res)
	case phaseSnap, phaseLog:
		m.onRecoveryRead(res)
	case phaseFinish:
		m.onFinishStep(res)
	}
}

func (m *Manager) onList(res disk.Result) {
	if res.Err != nil {
		m.fail(fmt.Errorf("listing %s: %w", m.cfg.Dir, res.Err))
		return
	}
	rc := m.rec
	for _, name := range res.Names {
		switch name {
		case SnapFile:
			rc.hasSnap = true
		case SnapTmpFile:
			rc.hasTmp = true
		case LogFile:
			rc.hasLog = true
		}
	}
	if !rc.hasSnap {
		rc.note("S1 no acks.snap: start from floor 0")
		m.startLogScan()
		return
	}
	rc.phase, rc.name = phaseSnap, m.path(SnapFile)
	m.readFrom(0)
}

// readFrom reads the current file from off to its end, chunk by chunk, replacing what
// was read from off on.
func (m *Manager) readFrom(off int) {
	rc := m.rec
	rc.buf = rc.buf[:off]
	rc.want = m.cfg.RecoveryReadBytes
	m.issue(
		purposeRecover,
		disk.Op{Kind: disk.KindReadAt, Name: rc.name, Off: int64(off), Len: rc.want},
	)
}

func (m *Manager) onRecoveryRead(res disk.Result) {
	rc := m.rec
	if res.Err != nil {
		if rc.readErrs < m.cfg.ReadRetriesMax {
			rc.readErrs++
			m.readFrom(len(rc.buf))
			return
		}
		m.fail(fmt.Errorf("F1 reading %s at %d: %w", rc.name, len(rc.buf), res.Err))
		return
	}
	rc.readErrs = 0
	rc.buf = append(rc.buf, res.Data...)
	if len(rc.buf) > RecoveryBytesMax {
		m.fail(fmt.Errorf("F1 %s is over %d bytes", rc.name, RecoveryBytesMax))
		return
	}
	if len(res.Data) == rc.want {
		m.readFrom(len(rc.buf))
		return
	}
	if rc.phase == phaseSnap {
		m.decideSnapshot()
	} else {
		m.scanLog()
	}
}

// decideSnapshot applies rows S2 and S3 to the bytes of acks.snap.
func (m *Manager) decideSnapshot() {
	rc := m.rec
	v, err := decodeSnapshot(rc.buf, m.cfg.Dir)
	if err != nil && rc.damageReads < m.cfg.ReadRetriesMax {
		rc.damageReads++ // reads may be corrupted in passing: read it again before deciding
		m.readFrom(0)
		return
	}
	if err != nil {
		rc.note(
			fmt.Sprintf("S3 acks.snap fails its check (%v): ignore it; its acks may be redelivered", err),
		)
	} else {
		rc.set = newAckSet(v.floor)
		for i := 0; i < v.nbits; i++ {
			if v.bitmap[i/8] == 0 {
				i += 7 - i%8 // skip an empty byte
				continue
			}
			if v.bit(i) {
				rc.set.setBit(v.floor + uint64(i))
			}
		}
		rc.set.advance()
		rc.note(fmt.Sprintf("S2 acks.snap: floor %d, %d acked above", v.floor, rc.set.count))
	}
	m.startLogScan()
}

func (m *Manager) startLogScan() {
	rc := m.rec
	if !rc.hasLog {
		rc.note("L1 no acks.log: create it")
		m.finishRecovery()
		return
	}
	rc.phase, rc.name, rc.buf = phaseLog, m.path(LogFile), nil
	rc.scanPos, rc.damageOff, rc.damageReads, rc.resyncAt = 0, -1, 0, -1
	m.readFrom(0)
}

// scanLog applies rows L2 to L6 to the frames of acks.log, from scanPos on.
func (m *Manager) scanLog() {
	rc := m.rec
	b := rc.buf
	p := rc.scanPos
	for p < len(b) {
		floor, offsets, n, err := DecodeAckFrameFor(b[p:], m.cfg.Dir)
		if err == nil {
			rc.apply(floor, offsets) // row L2
			p += n
			continue
		}
		if p != rc.damageOff {
			rc.damageOff, rc.damageReads, rc.resyncAt = p, 0, -1
			rc.note(fmt.Sprintf("L3 acks.log@%d fails its check (%v): read it again", p, err))
		}
		q := findResync(b, p+1, m.cfg.Dir)
		if q >= 0 && (rc.resyncAt < 0 || q < rc.resyncAt) {
			rc.resyncAt = q // a frame that was valid in one read is a frame boundary
		}
		if rc.damageReads < m.cfg.ReadRetriesMax {
			rc.damageReads++
			rc.scanPos = p
			m.readFrom(p)
			return
		}
		if rc.resyncAt >= 0 {
			rc.note(
				fmt.Sprintf("L4 acks.log@%d damaged, valid frames follow: skip %d bytes", p, rc.resyncAt-p),
			)
			p, rc.skipped = rc.resyncAt, true
			continue
		}
		rc.truncAt = int64(p)
		break
	}
	rc.note(fmt.Sprintf("L2 acks.log: %d frames applied", rc.frames))
	m.logSize = int64(len(b))
	if rc.truncAt >= 0 {
		rc.note(fmt.Sprintf("L5 acks.log@%d torn tail: truncate", rc.truncAt))
		m.logSize = rc.truncAt
	} else {
		rc.note(fmt.Sprintf("L6 acks.log clean end at %d", len(b)))
	}
	m.finishRecovery()
}

// apply adds one valid ack-log frame: its floor and its offsets are facts, whatever order
// the frames come in.
func (rc *recovery) apply(floor uint64, offsets []uint64) {
	rc.frames++
	rc.set.raiseFloor(floor)
	for _, o := range offsets {
		if o >= rc.set.floor {
			rc.set.add(o)
		}
	}
}

func (rc *recovery) note(s string) { rc.notes = append(rc.notes, s) }

// finishRecovery cuts a torn tail (and syncs it), removes a leftover snapshot temp file,
// creates a missing log or syncs the one read, then syncs the directory.
func (m *Manager) finishRecovery() {
	rc := m.rec
	rc.phase, rc.buf = phaseFinish, nil
	if rc.truncAt >= 0 {
		m.issue(purposeRecover, disk.Op{Kind: disk.KindTruncate, Name: m.path(LogFile), Off: rc.truncAt})
		rc.pending++
	}
	if rc.hasTmp {
		rc.note("T1 acks.snap.tmp left by a compaction: remove it")
		m.issue(purposeRecover, disk.Op{Kind: disk.KindRemove, Name: m.path(SnapTmpFile)})
		rc.pending++
		rc.dirSync = true
	}
	if !rc.hasLog {
		m.issue(purposeRecover, disk.Op{Kind: disk.KindCreate, Name: m.path(LogFile)})
		rc.pending++
		m.logSize = 0
	} else if rc.truncAt < 0 {
		// Row R1: after a process crash the files read are the page cache, which may hold
		// a flush whose fdatasync never ran: make what recovery decided by durable.
		m.issue(purposeRecover, disk.Op{Kind: disk.KindSync, Name: m.path(LogFile)})
		rc.pending++
	}
	// Row R1: the entries listed may be the page cache's too (a create or rename whose
	// directory sync never ran, cluster seed 69): sync the directory every time, or a
	// later machine crash can drop acks.log with every ack flushed into it since.
	rc.dirSync = true
	m.maybeCompleteRecovery()
}

func (m *Manager) onFinishStep(res disk.Result) {
	rc := m.rec
	if res.Err != nil && !(res.Kind == disk.KindRemove && errors.Is(res.Err, disk.ErrNotExist)) {
		m.fail(fmt.Errorf("recovery %s: %w", res.Kind, res.Err))
		return
	}
	if res.Kind == disk.KindTruncate {
		// The new size is durable only after a sync of the file.
		m.issue(purposeRecover, disk.Op{Kind: disk.KindSync, Name: m.path(LogFile)})
		return
	}
	rc.pending--
	m.maybeCompleteRecovery()
}

func (m *Manager) maybeCompleteRecovery() {
	rc := m.rec
	if rc.pending > 0 {
		return
	}
	if rc.dirSync {
		rc.dirSync = false
		rc.pending++
		m.issue(purposeRecover, disk.Op{Kind: disk.KindSyncDir, Name: m.cfg.Dir})
		return
	}
	rc.set.raiseFloor(m.oldest)
	m.acked = rc.set
	m.cursor = rc.set.floor
	m.ready = true
	m.rec = nil
	m.out.Recovered = &Recovery{AckFloor: m.acked.floor, Acked: m.acked.count, Decisions: rc.notes}
	m.maybeCompact(rc.skipped)
}
