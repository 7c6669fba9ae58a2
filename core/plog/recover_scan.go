package plog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/frame"
)

// onSegmentRead applies the recovery decision table (doc.go) to one read of a segment.
func (l *Log) onSegmentRead(res disk.Result) {
	rc := l.rec
	if res.Err != nil {
		if rc.ioRetries < l.cfg.ReadRetriesMax {
			rc.ioRetries++ // row R3: a read may fail in passing
			l.readAt(rc.off, rc.want)
			return
		}
		seg := rc.segs[rc.idx]
		rc.note(fmt.Sprintf("R10 %s@%d unreadable after %d reads", seg.name, rc.off, rc.ioRetries+1))
		l.failRecovery(fmt.Errorf("reading %s at %d: %w", seg.name, rc.off, res.Err))
		return
	}
	rc.ioRetries = 0
	if rc.phase == phaseSearch {
		l.searchStep(res.Data)
		return
	}
	l.scanStep(res.Data)
}

// scanStep keeps every valid frame at the expected offset (R2) and stops at the first
// one that is not: re-read it (R3), then search past it (R4-R6).
func (l *Log) scanStep(data []byte) {
	rc := l.rec
	atEOF := len(data) < rc.want
	p := 0
	for p < len(data) {
		bt, n, err := DecodeBatchFor(data[p:], l.cfg.Dir)
		if err == nil && bt.BaseOffset == rc.expected {
			rc.accept(bt, n, rc.off+int64(p)) // row R2
			p += n
			continue
		}
		abs := rc.off + int64(p)
		if errors.Is(err, errShort) && !atEOF && p > 0 {
			// The frame continues past this read: read it whole from its start.
			l.readAt(abs, l.frameWant(data[p:]))
			return
		}
		if atEOF && frame.IsZero(zerosFrom(data, p)) {
			l.zerosToTheEnd(abs, rc.off+int64(len(data))) // row R12
			return
		}
		// Damage, or a frame longer than this read at its start. Either way the frame
		// is read again, whole, and counted: a length field corrupted differently on
		// every read must not keep the scan in place forever.
		if abs != rc.damageOff {
			rc.damageOff, rc.retries = abs, 0
		}
		if rc.retries < l.cfg.ReadRetriesMax {
			rc.retries++ // row R3: the damage may be a read corrupted in passing
			l.readAt(abs, l.frameWant(data[p:]))
			return
		}
		rc.passes, rc.bestPos = 0, -1
		l.startSearchPass()
		return
	}
	if atEOF {
		seg := rc.segs[rc.idx]
		rc.note(fmt.Sprintf("R7 %s clean end at %d", seg.name, rc.off+int64(len(data))))
		l.finishSegment(rc.off + int64(len(data)))
		return
	}
	l.readAt(rc.off+int64(p), l.cfg.RecoveryReadBytes)
}

// frameWant is the length of a read that holds the whole frame starting at b, when its
// length field is plausible.
func (l *Log) frameWant(b []byte) int {
	want := l.cfg.RecoveryReadBytes
	if fl, ok := frameLen(b); ok {
		want = max(want, fl)
	}
	return want
}

func (rc *recovery) accept(bt Batch, n int, pos int64) {
	seg := &rc.segs[rc.idx]
	seg.batches = append(
		seg.batches,
		batchRef{base: bt.BaseOffset, count: uint32(len(bt.Entries)), size: uint32(n), pos: pos},
	)
	seg.newestMs = max(seg.newestMs, bt.CommitTimeMs)
	rc.expected = bt.BaseOffset + uint64(len(bt.Entries))
}

func (l *Log) startSearchPass() {
	rc := l.rec
	rc.phase = phaseSearch
	l.readAt(rc.damageOff, l.cfg.RecoveryReadBytes)
}

// searchStep looks through one read for the first valid frame whose base offset is at or
// above the expected one. A pass ends at such a frame, at the best frame an earlier pass
// found, or at the end of the file.
func (l *Log) searchStep(data []byte) {
	rc := l.rec
	atEOF := len(data) < rc.want
	q := 0
	for ; q+frameHeaderBytes+batchFixedBytes <= len(data); q++ {
		pos := rc.off + int64(q)
		if rc.bestPos >= 0 && pos >= rc.bestPos {
			l.endSearchPass(rc.bestPos, rc.bestBase, 0)
			return
		}
		fl, ok := candidate(data[q:], rc.expected)
		if !ok {
			continue
		}
		if q+fl > len(data) {
			if atEOF || (q == 0 && rc.want > l.cfg.RecoveryReadBytes) {
				// Runs past the end of the file, or past a read sized for it (its
				// length changed between reads): not a frame, in this pass.
				continue
			}
			l.readAt(pos, max(l.cfg.RecoveryReadBytes, fl)) // read the candidate whole
			return
		}
		bt, _, err := DecodeBatchFor(data[q:q+fl], l.cfg.Dir)
		if err == nil && bt.BaseOffset >= rc.expected {
			l.endSearchPass(pos, bt.BaseOffset, 0)
			return
		}
	}
	if !atEOF {
		l.readAt(rc.off+int64(q), l.cfg.RecoveryReadBytes)
		return
	}
	l.endSearchPass(rc.bestPos, rc.bestBase, rc.off+int64(len(data)))
}

// candidate is a cheap header filter run before the CRC: the format byte, a length in
// range and a base offset that could follow. It returns the frame's claimed size.
func candidate(b []byte, expected uint64) (int, bool) {
	if len(b) < frameHeaderBytes+batchFixedBytes || (b[8] != formatV1 && b[8] != formatTagged) {
		return 0, false
	}
	fl, ok := frameLen(b)
	if !ok || binary.LittleEndian.Uint64(b[frameHeaderBytes:]) < expected {
		return 0, false
	}
	return fl, true
}

// endSearchPass takes the outcome of one pass: a frame at pos (pos < 0: none; then
// fileEnd is the segment's size). A frame at the expected offset loses nothing and is
// taken at once. A hole or a cut is decided only when ReadRetriesMax+1 passes agree, so
// that a read corrupted in passing cannot hide a valid frame behind it.
func (l *Log) endSearchPass(pos int64, base uint64, fileEnd int64) {
	rc := l.rec
	if pos >= 0 && (rc.bestPos < 0 || pos < rc.bestPos) {
		rc.bestPos, rc.bestBase = pos, base
	}
	rc.passes++
	if !(pos >= 0 && base == rc.expected) && rc.passes <= l.cfg.ReadRetriesMax {
		l.startSearchPass()
		return
	}
	seg := rc.segs[rc.idx]
	last := rc.idx == len(rc.segs)-1
	switch {
	case rc.bestPos >= 0:
		lost := "no offsets lost"
		if rc.bestBase > rc.expected {
			lost = fmt.Sprintf("offsets %d-%d are a hole", rc.expected, rc.bestBase-1)
			rc.holes++
		}
		rc.note(
			fmt.Sprintf(
				"R4 %s@%d damaged, a valid batch follows at %d: %s",
				seg.name,
				rc.damageOff,
				rc.bestPos,
				lost,
			),
		)
		rc.expected = rc.bestBase
		rc.phase, rc.retries, rc.damageOff = phaseScan, 0, -1
		l.readAt(rc.bestPos, l.cfg.RecoveryReadBytes)
	case last:
		rc.note(
			fmt.Sprintf("R5 %s@%d torn tail: cut %d bytes", seg.name, rc.damageOff, fileEnd-rc.damageOff),
		)
		rc.cut, rc.cutSize = true, rc.damageOff
		l.finishSegment(rc.damageOff)
	default:
		rc.note(
			fmt.Sprintf(
				"R6 %s@%d damaged to its end, not the last segment: kept, not cut",
				seg.name,
				rc.damageOff,
			),
		)
		l.finishSegment(fileEnd)
	}
}

// zerosFrom is what must be zeros for row R12 at data[p:]: all of it.
func zerosFrom(data []byte, p int) []byte {
	if mutZeroHeader {
		return data[p:min(p+frameHeaderBytes, len(data))]
	}
	return data[p:]
}

// zerosToTheEnd ends the segment at abs, where only zeros follow up to end: space never
// written (prealloc.go). A crash can lose a write, but no fault makes synced frames read
// as zeros to the end of a file, so one read decides. The zeros are kept: the next
// commits write over them.
func (l *Log) zerosToTheEnd(abs, end int64) {
	rc := l.rec
	seg := &rc.segs[rc.idx]
	rc.note(fmt.Sprintf("R12 %s@%d zeros to the end (%d): kept", seg.name, abs, end))
	seg.zeroEnd = end
	l.finishSegment(abs)
}
