package wal

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// maybeFlush starts a group commit when none is in flight and appends are staged:
// one write of every staged frame, then one fdatasync, then every append is answered.
func (l *Log) maybeFlush() {
	if l.state != stateReady || l.flush != flushIdle || len(l.staged) == 0 {
		return
	}
	if l.rotationDue() {
		l.startRotate()
		return
	}
	seg := l.active()
	l.inflight, l.staged = l.staged, l.inflight[:0]
	l.inflightBuf, l.stagedBuf = l.stagedBuf, l.spareBuf[:0]
	l.spareBuf = nil
	data := l.withZeros(seg)
	l.issue(purposeWrite, disk.Op{Kind: disk.KindWriteAt, Name: seg.name, Off: seg.size, Data: data})
	l.inflightOff, l.inflightLen = seg.size, len(data)
	seg.size += int64(len(l.inflightBuf))
	l.flush = flushWriting
}

func (l *Log) onGroupWritten(nowNs int64, res disk.Result) {
	assert.That(l.flush == flushWriting, "wal: group write completed while not writing")
	if errors.Is(res.Err, disk.ErrNoSpace) && !mutNoSpaceFatal {
		l.cutNoSpace()
		return
	}
	if res.Err != nil {
		l.fail(res.Err)
		return
	}
	l.noSpace = false
	seg := l.active()
	seg.zeroEnd = max(seg.zeroEnd, l.inflightOff+int64(l.inflightLen))
	if mutAckBeforeSync {
		l.ackInflight()
	}
	l.issue(purposeSync, disk.Op{Kind: disk.KindSync, Name: l.active().name})
	l.flush = flushSyncing
}

func (l *Log) onGroupSynced(res disk.Result) {
	assert.That(l.flush == flushSyncing, "wal: group sync completed while not syncing")
	if res.Err != nil && !mutTrustFailedSync {
		// Never retried and never trusted: the pages may be lost while the kernel says
		// they are clean. The node must restart and recover from what is on disk.
		l.fail(res.Err)
		return
	}
	l.flush = flushVerifying
	l.verifyTries = 0
	l.readBack()
}

// readBack reads the group's bytes back from the device after the sync: a write that
// reported success but stored other bytes (a bit flip, a lost or misdirected write) is
// caught here, before any of its records is answered durable. It bypasses the page cache
// (Op.Device), which holds what was written whatever the device stored.
func (l *Log) readBack() {
	l.issue(
		purposeVerify,
		disk.Op{
			Kind:   disk.KindReadAt,
			Device: !mutReadBackCache,
			Name:   l.active().name,
			Off:    l.inflightOff,
			Len:    len(l.inflightBuf),
		},
	)
}

func (l *Log) onGroupVerified(res disk.Result) {
	assert.That(l.flush == flushVerifying, "wal: group read-back completed while not verifying")
	if res.Err == nil && bytes.Equal(res.Data, l.inflightBuf) {
		l.groupDurable()
		return
	}
	if l.verifyTries < l.cfg.ReadRetriesMax {
		l.verifyTries++ // a read can be corrupted in passing: read again before deciding
		l.readBack()
		return
	}
	if res.Err != nil {
		l.fail(fmt.Errorf("reading back a group commit: %w", res.Err))
		return
	}
	l.fail(
		errors.New("silent write corruption: a group commit read back differs from what was written"),
	)
}

// groupDurable answers the group in flight: written, synced and read back intact.
func (l *Log) groupDurable() {
	l.stats.GroupsSynced++
	l.stats.RecordsSynced += uint64(len(l.inflight))
	l.stats.BytesSynced += uint64(len(l.inflightBuf))
	l.ackInflight()
	l.spareBuf = l.inflightBuf[:0]
	l.inflightBuf = nil
	l.flush = flushIdle
	l.maybeRotate()
	l.maybeFlush()
}

// ackInflight answers every append of the group in flight: their bytes are durable.
func (l *Log) ackInflight() {
	if len(l.inflight) == 0 {
		return
	}
	for _, w := range l.inflight {
		l.answer(w.token, w.seq, nil)
	}
	last := l.inflight[len(l.inflight)-1].seq
	assert.That(last >= l.durableNext, "wal: durable horizon moved backwards")
	l.durableNext = last + 1
	l.inflight = l.inflight[:0]
}

// rotationDue: the active segment is past the hard cap, or past the rotation size and
// fully dispatched (so that compaction can reclaim it once the checkpoint is durable).
func (l *Log) rotationDue() bool {
	seg := l.active()
	if seg.size == 0 || seg.firstSeq >= l.durableNext {
		return false // nothing durable in it: rotating would reuse its name
	}
	if seg.size >= l.cfg.SegmentBytesMax {
		return true
	}
	return seg.size >= l.cfg.SegmentRotateBytes && l.ckptWanted >= l.durableNext
}

func (l *Log) maybeRotate() {
	if l.state == stateReady && l.flush == flushIdle && l.rotationDue() {
		l.startRotate()
	}
}

// startRotate creates the next active segment, named by the first seq it will hold, and
// makes its directory entry durable before any record is written to it.
func (l *Log) startRotate() {
	l.flush = flushRotating
	l.issue(purposeRotate, disk.Op{Kind: disk.KindCreate, Name: segmentName(l.cfg.Dir, l.durableNext)})
}

func (l *Log) onRotateStep(res disk.Result) {
	assert.That(l.flush == flushRotating, "wal: rotation step while not rotating")
	if res.Err != nil {
		l.fail(res.Err)
		return
	}
	switch res.Kind {
	case disk.KindCreate:
		l.issue(purposeRotate, disk.Op{Kind: disk.KindSyncDir, Name: l.cfg.Dir})
	case disk.KindSyncDir:
		l.segs = append(
			l.segs,
			segment{name: segmentName(l.cfg.Dir, l.durableNext), firstSeq: l.durableNext},
		)
		l.flush = flushIdle
		l.maybeCompact()
		l.maybeFlush()
	}
}
