package plog

import (
	"fmt"

	"github.com/narad/narad/core/disk"
)

// verifyTail reads the newest frame of the last segment back after the recovery sync
// (row R11). It is the only frame that can have been written and not synced before the
// restart (one commit is in flight at a time, and a segment rolls only after its last
// commit was synced), and the scan's read of it proves nothing about the device: a write
// corrupted silently and a read corrupted in passing can cancel out. So, as in
// commitDurable, the frame counts only once a read of the device (bypassing the page
// cache, which after a process crash still holds what was written) after its fdatasync
// verifies.
func (l *Log) verifyTail() {
	last := l.active()
	if len(last.batches) == 0 || mutTrustTail { // the mutation accepts the tail unverified
		l.completeRecovery()
		return
	}
	l.rec.phase = phaseReadBack
	l.readNewest()
}

func (l *Log) readNewest() {
	last := l.active()
	b := last.batches[len(last.batches)-1]
	l.issue(
		purposeRecover,
		disk.Op{
			Kind:   disk.KindReadAt,
			Device: !mutReadBackCache,
			Name:   last.name,
			Off:    b.pos,
			Len:    int(b.size),
		},
	)
}

// onVerifyRead accepts the newest frame, reads it again (a read may be corrupted or fail
// in passing), fails recovery on persistent read errors (R10) or cuts the frame when its
// bytes never verify: it was never acknowledged, since every acknowledged frame was read
// back intact after its own fdatasync and synced bytes do not change.
func (l *Log) onVerifyRead(res disk.Result) {
	rc := l.rec
	last := l.active()
	b := last.batches[len(last.batches)-1]
	if res.Err == nil && frameMatches(res.Data, b, l.cfg.Dir) {
		l.completeRecovery()
		return
	}
	if res.Err != nil {
		if rc.ioRetries < l.cfg.ReadRetriesMax {
			rc.ioRetries++
			l.readNewest()
			return
		}
		rc.note(fmt.Sprintf("R10 %s@%d unreadable after %d reads", last.name, b.pos, rc.ioRetries+1))
		l.failRecovery(fmt.Errorf("reading back %s at %d: %w", last.name, b.pos, res.Err))
		return
	}
	if rc.retries < l.cfg.ReadRetriesMax {
		rc.retries++
		l.readNewest()
		return
	}
	rc.note(
		fmt.Sprintf(
			"R11 %s@%d does not read back intact after the sync: cut %d bytes",
			last.name,
			b.pos,
			last.size-b.pos,
		),
	)
	last.batches = last.batches[:len(last.batches)-1]
	last.size, last.zeroEnd = b.pos, 0 // the cut takes any zeros too
	l.hw = b.base
	rc.retries, rc.ioRetries = 0, 0
	rc.phase, rc.pending = phaseFinish, 1 // the cut's sync brings recovery back here
	l.issue(purposeRecover, disk.Op{Kind: disk.KindTruncate, Name: last.name, Off: b.pos})
}

// frameMatches reports whether data is exactly the frame the index holds for b, a frame
// of the log in dir.
func frameMatches(data []byte, b batchRef, dir string) bool {
	bt, n, err := DecodeBatchFor(data, dir)
	return err == nil && n == int(b.size) && bt.BaseOffset == b.base && len(bt.Entries) == int(b.count)
}
