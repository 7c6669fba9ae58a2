package wal

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/frame"
)

// onSegmentRead applies the recovery decision table (doc.go) to the frames of one read.
func (l *Log) onSegmentRead(res disk.Result) {
	rc := l.rec
	seg := rc.segs[rc.segIdx]
	if res.Err != nil {
		if rc.retries < l.cfg.ReadRetriesMax {
			rc.retries++
			l.readSegment()
			return
		}
		l.fail(fmt.Errorf("reading %s at %d: %w", seg.name, rc.off, res.Err))
		return
	}
	data := res.Data
	atEOF := len(data) < rc.want
	p := 0
	for p < len(data) {
		r, n, err := DecodeFrame(data[p:])
		if err == nil && r.Seq >= rc.minSeq() {
			rc.accept(r) // row R4: a valid frame
			p += n
			continue
		}
		if errors.Is(err, errShort) && !atEOF {
			break // the frame continues past this read: read on from its start
		}
		next, goOn := l.pastDamage(data, p, atEOF, err)
		if !goOn {
			return
		}
		p = next
	}
	if atEOF {
		rc.note(fmt.Sprintf("R8 %s clean end at %d", seg.name, rc.off+int64(len(data))))
		l.nextSegment(rc.off + int64(len(data)))
		return
	}
	rc.off += int64(p)
	rc.retries, rc.toEOF = 0, false
	l.readSegment()
}

func (rc *recovery) accept(r Record) {
	rc.lastSeq = r.Seq
	rc.records = append(rc.records, r)
}

// finishScan decides the checkpoint and the next seq, then truncates torn tails and
// creates a first segment and the checkpoint file where they are missing.
func (l *Log) finishScan() {
	rc := l.rec
	rc.phase = phaseFinish
	ckpt := uint64(1)
	if len(rc.segs) > 0 {
		ckpt = rc.segs[0].firstSeq
	}
	if len(rc.records) > 0 {
		ckpt = rc.records[0].Seq
	}
	if rc.ckptOK {
		ckpt = rc.ckpt.seq
		l.ckptGen = rc.ckpt.gen
		l.skipWanted, l.skipDurable = rc.ckpt.skip, rc.ckpt.skip
	}
	next := max(rc.lastSeq+1, ckpt, 1)
	if rc.ckptOK {
		next = max(next, rc.ckpt.skip.Below) // a seq the skip-set calls done is never reused
	}
	if len(rc.segs) > 0 {
		next = max(next, rc.segs[len(rc.segs)-1].firstSeq)
	}
	l.nextSeq, l.durableNext = next, next
	l.ckptWanted, l.ckptDurable = ckpt, ckpt
	l.segs = rc.segs
	rc.truncOps = make(map[uint64]string, len(rc.truncs))
	for _, t := range rc.truncs {
		l.issue(purposeRecover, disk.Op{Kind: disk.KindTruncate, Name: t.name, Off: t.size})
		rc.truncOps[l.nextOpID] = t.name
		rc.pending++
	}
	// Sync the directory even when recovery created nothing: after a process crash the
	// listing shows the page cache's entries, and a segment whose create the dead process
	// never made durable (its SyncDir failed or was still in flight) is listed all the
	// same. Appending to it and acknowledging would put records in a file a machine crash
	// can still unlink (cluster seed 7 with the process crash and SyncDir EIO of issue 11).
	rc.dirSync = false
	if len(l.segs) == 0 {
		rc.note("R9 no segment: create the first one")
		l.segs = []segment{{name: segmentName(l.cfg.Dir, next), firstSeq: next}}
		l.issue(purposeRecover, disk.Op{Kind: disk.KindCreate, Name: l.segs[0].name})
		rc.pending++
		rc.dirSync = false
	}
	if !rc.hasCkpt {
		l.issue(purposeRecover, disk.Op{Kind: disk.KindCreate, Name: l.checkpointName()})
		rc.pending++
		rc.dirSync = false
	}
	l.maybeFinishRecovery()
}

func (l *Log) onFinishStep(res disk.Result) {
	rc := l.rec
	if res.Err != nil {
		l.fail(fmt.Errorf("recovery %s: %w", res.Kind, res.Err))
		return
	}
	switch res.Kind {
	case disk.KindTruncate:
		// The truncated size is durable only after a sync of the file.
		name, ok := rc.truncOps[res.ID]
		assert.That(ok, "wal: truncate completion for an unknown segment")
		l.issue(purposeRecover, disk.Op{Kind: disk.KindSync, Name: name})
		return
	case disk.KindSync, disk.KindCreate, disk.KindSyncDir:
		rc.pending--
	}
	l.maybeFinishRecovery()
}

func (l *Log) maybeFinishRecovery() {
	rc := l.rec
	if rc.pending > 0 {
		return
	}
	if !rc.dirSync {
		rc.dirSync = true
		rc.pending++
		l.issue(purposeRecover, disk.Op{Kind: disk.KindSyncDir, Name: l.cfg.Dir})
		return
	}
	l.completeRecovery()
}

func (l *Log) completeRecovery() {
	rc := l.rec
	ckpt := l.ckptDurable
	var keep []Record
	for _, r := range rc.records {
		if r.Seq >= ckpt {
			keep = append(keep, r)
		}
	}
	l.out.Recovered = &Recovery{
		Checkpoint: ckpt, Skip: l.skipDurable, NextSeq: l.nextSeq, Records: keep,
		Decisions: rc.notes, CorruptSkip: rc.corrupt,
	}
	l.rec = nil
	l.state = stateReady
	l.maybeCompact()
}

// zerosFrom is what must be zeros for row R10 at data[p:]: all of it.
func zerosFrom(data []byte, p int) []byte {
	if mutZeroHeader {
		return data[p:min(p+frameHeaderBytes, len(data))]
	}
	return data[p:]
}

// pastDamage applies rows R5 to R7 to the damage at data[p:]. It returns where the scan
// goes on (past the damage, R6), or false when it has asked for the next read or ended
// the segment (R5, R7).
func (l *Log) pastDamage(data []byte, p int, atEOF bool, err error) (int, bool) {
	rc := l.rec
	seg := rc.segs[rc.segIdx]
	abs := rc.off + int64(p)
	if atEOF && frame.IsZero(zerosFrom(data, p)) {
		// Row R10: zeros to the end. Never-written space (prealloc.go): a crash can lose
		// a write, but no fault makes synced frames read as zeros to the end of a file.
		end := rc.off + int64(len(data))
		rc.note(fmt.Sprintf("R10 %s@%d zeros to the end (%d): kept", seg.name, abs, end))
		rc.segs[rc.segIdx].zeroEnd = end
		l.nextSegment(abs)
		return 0, false
	}
	if abs != rc.damageOff {
		rc.damageOff, rc.retries = abs, 0
	}
	if rc.retries < l.cfg.ReadRetriesMax {
		rc.retries++ // row R5: damage may be a corrupted read; read it again
		rc.off = abs
		l.readSegment()
		return 0, false
	}
	if !atEOF {
		rc.off, rc.toEOF = abs, true // need the rest of the file to look for a resync
		l.readSegment()
		return 0, false
	}
	found := int64(-1)
	if q := findResync(data, p+1, rc.minSeq()); q >= 0 {
		found = rc.off + int64(q)
	}
	decided, at := rc.confirmResync(abs, found, ResyncConfirmReads)
	if !decided {
		rc.off = abs // read the rest of the segment again from the damage
		l.readSegment()
		return 0, false
	}
	if at < 0 {
		rc.note(fmt.Sprintf("R7 %s@%d torn tail (%v): truncate", seg.name, abs, err))
		rc.truncs = append(rc.truncs, segment{name: seg.name, size: abs})
		l.nextSegment(abs)
		return 0, false
	}
	q := int(at - rc.off)
	rc.note(fmt.Sprintf("R6 %s@%d fails its check and valid frames follow: skip %d bytes",
		seg.name, abs, q-p))
	rc.corrupt++
	if mutSkipAfterTorn { // the bug: the first valid frame after the damage is lost
		if _, n, err := DecodeFrame(data[q:]); err == nil {
			q += n
		}
	}
	return q, true
}
