package plog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

type recoveryPhase uint8

const (
	phaseList     recoveryPhase = iota + 1
	phaseScan                   // reading frames in order
	phaseSearch                 // after damage: looking for the next valid frame
	phaseFinish                 // cutting the torn tail, syncing the last segment and the directory
	phaseReadBack               // reading the newest frame back after that sync (R11)
)

// recovery is the state of Open: list the directory, scan every segment frame by frame
// (recover_scan.go applies the decision table of doc.go), then make what was kept durable.
type recovery struct {
	phase    recoveryPhase
	segs     []segment
	idx      int    // segment being scanned
	off      int64  // file offset of the read in flight
	want     int    // its length
	expected uint64 // base offset the next valid batch must carry

	ioRetries int   // consecutive reads that failed with an error
	retries   int   // re-reads of the damaged frame at damageOff
	damageOff int64 // file offset of the damaged frame being retried, -1 for none

	// The search for a valid frame past damage at damageOff. It runs in passes (a read
	// corrupted in passing could hide a frame) and keeps the earliest frame any pass found.
	passes   int
	bestPos  int64 // -1 when no pass found a frame
	bestBase uint64

	notes   []string
	holes   int
	cut     bool  // the last segment's torn tail is cut
	cutSize int64 // its new size
	pending int   // finish-phase ops outstanding
}

// Open starts recovery. Commits and reads are answered ErrNotReady until Ready reports
// Recovered (or Failed: recovery could not read the directory or a segment, or found
// segments that overlap; the node stops and an operator looks).
func (l *Log) Open(nowNs int64) {
	assert.That(l.state == stateNew, "plog: Open called twice")
	l.state = stateRecovering
	l.rec = &recovery{phase: phaseList, damageOff: -1, bestPos: -1}
	l.issue(purposeRecover, disk.Op{Kind: disk.KindList, Name: l.cfg.Dir})
}

func (l *Log) recoverStep(res disk.Result) {
	switch l.rec.phase {
	case phaseList:
		l.onList(res)
	case phaseScan, phaseSearch:
		l.onSegmentRead(res)
	case phaseFinish:
		l.onFinishStep(res)
	case phaseReadBack:
		l.onVerifyRead(res)
	}
}

// parseSegmentName returns the base offset of a segment file name, or false for a file
// that is not a segment (it is left alone).
func parseSegmentName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, ".log")
	if !ok || len(hex) != 16 {
		return 0, false
	}
	base, err := strconv.ParseUint(hex, 16, 64)
	return base, err == nil
}

func (l *Log) onList(res disk.Result) {
	if res.Err != nil {
		l.failRecovery(fmt.Errorf("listing %s: %w", l.cfg.Dir, res.Err))
		return
	}
	rc := l.rec
	for _, name := range res.Names { // sorted by the contract; fixed-width hex sorts by offset
		base, ok := parseSegmentName(name)
		if !ok {
			rc.note(fmt.Sprintf("-- %s is not a segment: ignored", name))
			continue
		}
		rc.segs = append(rc.segs, segment{name: l.cfg.Dir + "/" + name, base: base})
	}
	if len(rc.segs) == 0 {
		rc.note("R1 no segment: empty log")
		l.finishScan()
		return
	}
	rc.expected = rc.segs[0].base // the oldest offset still stored
	l.startSegment()
}

// startSegment checks the segment's base offset against the offsets before it and starts
// reading it.
func (l *Log) startSegment() {
	rc := l.rec
	seg := rc.segs[rc.idx]
	switch {
	case seg.base > rc.expected:
		rc.note(
			fmt.Sprintf(
				"R8 %s starts past offset %d: offsets %d-%d are a hole",
				seg.name,
				rc.expected,
				rc.expected,
				seg.base-1,
			),
		)
		rc.holes++
		rc.expected = seg.base
	case seg.base < rc.expected:
		rc.note(
			fmt.Sprintf(
				"R9 %s starts at %d, below offset %d that the segment before reached: segments overlap",
				seg.name,
				seg.base,
				rc.expected,
			),
		)
		l.failRecovery(
			fmt.Errorf(
				"%s overlaps the segment before it (base %d, expected %d)",
				seg.name,
				seg.base,
				rc.expected,
			),
		)
		return
	}
	rc.phase = phaseScan
	rc.retries, rc.damageOff = 0, -1
	l.readAt(0, l.cfg.RecoveryReadBytes)
}

func (l *Log) readAt(off int64, want int) {
	rc := l.rec
	rc.off, rc.want = off, want
	l.issue(
		purposeRecover,
		disk.Op{Kind: disk.KindReadAt, Name: rc.segs[rc.idx].name, Off: off, Len: want},
	)
}

// finishSegment records the size of the segment just scanned and moves to the next.
func (l *Log) finishSegment(size int64) {
	rc := l.rec
	rc.segs[rc.idx].size = size
	rc.idx++
	if rc.idx < len(rc.segs) {
		l.startSegment()
		return
	}
	l.finishScan()
}

func (rc *recovery) note(s string) { rc.notes = append(rc.notes, s) }

// finishScan installs what the scan found, then makes it durable before anything is
// reported: the torn tail is cut, and the last segment is synced, cut or not, because a
// restarted process may be looking at a page cache holding frames the device does not (a
// write whose fdatasync never ran). Exposing them and losing them in a later crash would
// move the high-watermark backwards. The directory is synced for the same reason: the
// last segment's entry may not be durable yet.
func (l *Log) finishScan() {
	rc := l.rec
	rc.phase = phaseFinish
	l.cutToVerifiedEnd()
	l.segs = rc.segs
	l.hw = rc.expected
	if len(l.segs) == 0 {
		l.hw = max(l.hw, l.cfg.BaseOffset) // an empty log starts at its base (Config)
		l.oldest = l.hw
		l.completeRecovery()
		return
	}
	rc.retries, rc.ioRetries = 0, 0
	l.oldest = l.segs[0].base
	last := l.active()
	if rc.cut {
		last.zeroEnd = 0 // the cut takes any zeros too
		l.issue(purposeRecover, disk.Op{Kind: disk.KindTruncate, Name: last.name, Off: rc.cutSize})
	} else {
		l.issue(purposeRecover, disk.Op{Kind: disk.KindSync, Name: last.name})
	}
	l.issue(purposeRecover, disk.Op{Kind: disk.KindSyncDir, Name: l.cfg.Dir})
	rc.pending = 2
}

func (l *Log) onFinishStep(res disk.Result) {
	rc := l.rec
	if res.Err != nil {
		l.failRecovery(fmt.Errorf("recovery %s: %w", res.Kind, res.Err))
		return
	}
	if res.Kind == disk.KindTruncate {
		// The cut is durable only after a sync of the file.
		l.issue(purposeRecover, disk.Op{Kind: disk.KindSync, Name: l.active().name})
		return
	}
	rc.pending--
	if rc.pending == 0 {
		l.verifyTail()
	}
}

func (l *Log) completeRecovery() {
	rc := l.rec
	l.out.Recovered = &Recovery{
		HighWatermark: l.hw,
		OldestOffset:  l.oldest,
		Decisions:     rc.notes,
		Holes:         rc.holes,
	}
	l.rec = nil
	l.state = stateReady
}

// cutToVerifiedEnd drops from the scan's result every frame at or past Config.VerifiedEnd
// (a reopen's): they are of commits answered failed. Only the last segment's newest
// frames can be (one commit is in flight at a time, and it writes to the active segment).
func (l *Log) cutToVerifiedEnd() {
	rc := l.rec
	if !l.cfg.HasVerifiedEnd || mutReopenTail {
		return
	}
	for len(rc.segs) > 0 && rc.expected > l.cfg.VerifiedEnd {
		last := &rc.segs[len(rc.segs)-1]
		if len(last.batches) == 0 {
			break
		}
		b := last.batches[len(last.batches)-1]
		if b.base < l.cfg.VerifiedEnd {
			break
		}
		rc.note(
			fmt.Sprintf(
				"reopen: %s@%d holds offsets %d-%d of a commit answered failed: cut",
				last.name,
				b.pos,
				b.base,
				b.base+uint64(b.count)-1,
			),
		)
		last.batches = last.batches[:len(last.batches)-1]
		rc.cut, rc.cutSize, last.size = true, b.pos, b.pos
		rc.expected = b.base
	}
}
