package wal

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// writeCheckpoint writes the wanted checkpoint into the slot after the newest durable one
// and syncs it. One write and one fdatasync cover every move since the last one.
func (l *Log) writeCheckpoint() {
	assert.That(l.ckptWriting == 0, "wal: two checkpoint writes in flight")
	l.ckptFlushAt = 0
	if l.ckptWanted <= l.ckptDurable && l.skipWanted.Equal(l.skipDurable) {
		return
	}
	l.ckptWriting, l.skipWriting = l.ckptWanted, l.skipWanted
	gen := l.ckptGen + 1
	l.ckptSlot = encodeCheckpointSlot(
		checkpointSlot{gen: gen, seq: l.ckptWriting, skip: l.skipWriting},
	)
	l.ckptVerifyTries = 0
	l.issue(purposeCheckpoint, disk.Op{
		Kind: disk.KindWriteAt, Name: l.checkpointName(), Off: checkpointSlotOffset(gen),
		Data: l.ckptSlot,
	})
}

// readBackCheckpoint reads the slot just synced from the device. Compaction removes
// segments on the strength of the durable checkpoint, so a slot write that reported
// success but landed elsewhere (a misdirected or corrupted write) must not count: the
// device would keep the old slot while the records it still needs are removed (walsim
// seed 210).
func (l *Log) readBackCheckpoint() {
	l.issue(purposeCheckpoint, disk.Op{Kind: disk.KindReadAt, Device: true, Name: l.checkpointName(),
		Off: checkpointSlotOffset(l.ckptGen + 1), Len: len(l.ckptSlot)})
}

func (l *Log) onCheckpointReadBack(res disk.Result) {
	if res.Err == nil && bytes.Equal(res.Data, l.ckptSlot) {
		l.ckptGen++
		l.ckptDurable, l.skipDurable = l.ckptWriting, l.skipWriting
		l.ckptWriting = 0 // moves that came in meanwhile have set ckptFlushAt already
		l.maybeCompact()
		return
	}
	if l.ckptVerifyTries < l.cfg.ReadRetriesMax {
		l.ckptVerifyTries++ // a read can be corrupted in passing: read again before deciding
		l.readBackCheckpoint()
		return
	}
	if res.Err != nil {
		l.fail(fmt.Errorf("reading back the checkpoint: %w", res.Err))
		return
	}
	l.fail(
		errors.New(
			"silent write corruption: the checkpoint slot read back differs from what was written",
		),
	)
}

func (l *Log) onCheckpointStep(nowNs int64, res disk.Result) {
	assert.That(l.ckptWriting != 0, "wal: checkpoint step with no checkpoint write")
	if res.Kind == disk.KindWriteAt && errors.Is(res.Err, disk.ErrNoSpace) && !mutNoSpaceFatal {
		l.checkpointNoSpace(nowNs)
		return
	}
	if res.Err != nil && res.Kind != disk.KindReadAt {
		l.fail(res.Err)
		return
	}
	switch res.Kind {
	case disk.KindWriteAt:
		l.issue(purposeCheckpoint, disk.Op{Kind: disk.KindSync, Name: l.checkpointName()})
	case disk.KindSync:
		l.readBackCheckpoint()
	case disk.KindReadAt:
		l.onCheckpointReadBack(res)
	}
}

// maybeCompact removes every segment wholly below the durable checkpoint. A segment is
// wholly below it when the next segment's first seq is at or below the checkpoint. The
// active segment is never removed.
func (l *Log) maybeCompact() {
	if l.compacting || l.state != stateReady {
		return
	}
	n := 0
	for n+1 < len(l.segs) && l.segs[n+1].firstSeq <= l.ckptDurable {
		n++
	}
	if n == 0 {
		return
	}
	l.compacting = true
	for _, s := range l.segs[:n] {
		l.issue(purposeCompact, disk.Op{Kind: disk.KindRemove, Name: s.name})
	}
	l.segs = append(l.segs[:0:0], l.segs[n:]...)
	l.compactPending = n
}

func (l *Log) onCompactStep(res disk.Result) {
	if res.Err != nil && !(res.Kind == disk.KindRemove && errors.Is(res.Err, disk.ErrNotExist)) {
		l.fail(res.Err)
		return
	}
	switch res.Kind {
	case disk.KindRemove:
		l.compactPending--
		if l.compactPending == 0 {
			l.issue(purposeCompact, disk.Op{Kind: disk.KindSyncDir, Name: l.cfg.Dir})
		}
	case disk.KindSyncDir:
		l.compacting = false
		l.maybeCompact()
	}
}
