package wal

import (
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// A full device (issue 13, point 5). A group write that fails with disk.ErrNoSpace is not
// a failure of the log. The write may have stored part of the group, so the active
// segment is cut back to where the group began and the cut is synced (a crash must not
// bring the partial frames back). Then every append of the group, and every append staged
// behind it, is answered ErrNoSpace: none of them was written, none reached the
// dispatcher, and their seqs are given again to later appends. For NoSpaceRetryNs after
// that, appends are refused at once (the node answers 507); the next one is tried. Space
// comes back as the dispatcher's checkpoint lets compaction remove segments, as partition
// retention removes theirs, or as an operator frees it. A cut that fails fails the log.
//
// A checkpoint slot write that finds no space (the skip-set makes the slot grow) is
// tried again after NoSpaceRetryNs: the slot written is the one after the newest durable
// slot, which recovery prefers only when it is intact, so the part of it the failed
// write may have stored is never trusted.

// NoSpaceRetryNs is how long appends are refused after a group write found no space.
const NoSpaceRetryNs = 100_000_000

// cutNoSpace cuts the active segment back to where the group that found no space began.
func (l *Log) cutNoSpace() {
	l.stats.NoSpaceWrites++
	l.noSpace = true
	l.flush = flushCutting
	l.active().size, l.active().zeroEnd = l.inflightOff, 0 // the cut takes any zeros too
	l.issue(purposeCut, disk.Op{Kind: disk.KindTruncate, Name: l.active().name, Off: l.inflightOff})
}

// onGroupCut: the cut is done, then synced; then the group is refused.
func (l *Log) onGroupCut(nowNs int64, res disk.Result) {
	assert.That(l.flush == flushCutting, "wal: a cut completed while not cutting")
	if res.Err != nil {
		l.fail(fmt.Errorf("cutting back a group write that found no space (%s): %w", res.Kind, res.Err))
		return
	}
	if res.Kind == disk.KindTruncate {
		l.issue(purposeCut, disk.Op{Kind: disk.KindSync, Name: l.active().name})
		return
	}
	l.refuseGroup(nowNs)
}

// refuseGroup answers ErrNoSpace to the group in flight and every append staged behind
// it, and gives their seqs back.
func (l *Log) refuseGroup(nowNs int64) {
	assert.That(
		len(l.inflight) > 0 && l.inflight[0].seq >= l.durableNext,
		"wal: refusing a group that is not the next",
	)
	l.nextSeq = l.inflight[0].seq
	for _, w := range append(l.inflight, l.staged...) {
		l.answer(w.token, 0, ErrNoSpace)
	}
	l.inflight, l.staged = l.inflight[:0], l.staged[:0]
	l.spareBuf, l.inflightBuf, l.stagedBuf = l.inflightBuf[:0], nil, l.stagedBuf[:0]
	l.flush = flushIdle
	l.refuseUntil = nowNs + NoSpaceRetryNs
	l.maybeRotate()
}

// checkpointNoSpace puts the checkpoint write that found no space off by NoSpaceRetryNs.
func (l *Log) checkpointNoSpace(nowNs int64) {
	l.stats.NoSpaceWrites++
	l.ckptWriting = 0
	l.ckptFlushAt = nowNs + NoSpaceRetryNs
}
