package plog

import (
	"bytes"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

type commitPhase uint8

const (
	phaseCreate  commitPhase = iota + 1 // the new segment's Create is in flight
	phaseDirSync                        // the directory sync that makes its entry durable
	phaseWrite                          // the frame's WriteAt
	phaseSync                           // the fdatasync covering it
	phaseVerify                         // the read-back of what was just written
	phaseCut                            // Truncate back to the high-watermark's position
	phaseCutSync                        // the fdatasync that makes the cut durable
)

// inflightCommit is the one commit between Commit and its answer (commitDurable).
type inflightCommit struct {
	token    uint64
	phase    commitPhase
	frame    []byte // the encoded batches; compared byte for byte with the read-back
	base     uint64
	count    int
	commitMs int64
	parts    []batchRef // the frame's batches (pos relative to the frame), in offset order
	pos      int64      // where the frame goes in the active segment: the high-watermark's position
	written  int        // bytes the write stores: the frame and any zeros after it (prealloc.go)
	retries  int        // read-back re-reads after a read error
	answered bool       // the commit was answered (poisoned: the cut that follows is cleanup)
}

// Commit appends one batch: entries get the offsets HighWatermark() onwards, and the
// answer is a CommitDone with the same token, once the batch is durable and read back
// intact (or not). The entries are copied; the caller may reuse them at once.
//
// At most one commit may be in flight: calling Commit before the previous one was answered
// is a programmer error and panics. A commit over a limit, before recovery finished or
// after a failed fdatasync is answered at once and changes nothing.
func (l *Log) Commit(nowNs int64, token uint64, entries []Entry) {
	_, err := BatchBytes(entries)
	if l.refuseCommit(token, err) {
		return
	}
	c := &inflightCommit{token: token, base: l.hw, count: len(entries), commitMs: nowNs / 1_000_000}
	c.frame = AppendBatchFor(nil, l.cfg.Dir, c.base, c.commitMs, entries)
	c.parts = []batchRef{{base: c.base, count: uint32(c.count), size: uint32(len(c.frame))}}
	l.startCommit(c)
}

// startCommit begins commitDurable for c: a roll first when the active segment is full,
// when there is none, or when c starts past the high-watermark (a copy's gap, copy.go).
func (l *Log) startCommit(c *inflightCommit) {
	l.commit = c
	gap := c.base != l.hw && (len(l.segs) == 0 || l.active().base != c.base)
	if len(l.segs) == 0 || l.active().size >= l.cfg.SegmentBytesMax || gap {
		// Roll: the new segment is named by the first offset it will hold, and its
		// directory entry is durable before any frame in it can be acknowledged.
		c.phase = phaseCreate
		l.trimZeros()
		l.issue(purposeCommit, disk.Op{Kind: disk.KindCreate, Name: segmentName(l.cfg.Dir, c.base)})
		return
	}
	l.writeFrame()
}

// refuseCommit answers a commit at once when the log cannot take it (recovering,
// poisoned) or limit, its limit check, failed; it asserts that no commit is in flight.
func (l *Log) refuseCommit(token uint64, limit error) bool {
	switch {
	case l.state == stateNew || l.state == stateRecovering:
		l.answerCommit(token, 0, 0, ErrNotReady)
		return true
	case l.poisoned != nil:
		l.answerCommit(token, 0, 0, l.poisoned)
		return true
	}
	assert.That(l.commit == nil, "plog: a second commit while one is in flight")
	if limit != nil {
		l.answerCommit(token, 0, 0, limit)
		return true
	}
	return false
}

func (l *Log) answerCommit(token, base uint64, count int, err error) {
	l.out.Commits = append(
		l.out.Commits,
		CommitDone{Token: token, BaseOffset: base, Count: count, Err: err},
	)
}

// commitStep advances commitDurable: create and dir-sync a new segment if rolling, write,
// fdatasync, read back and compare, and only then publish. A failed write or a mismatch
// cuts the segment back (ErrRetry); a failed fdatasync poisons the log (ErrFailed).
func (l *Log) commitStep(res disk.Result) {
	c := l.commit
	assert.That(c != nil, "plog: commit step with no commit in flight")
	switch c.phase {
	case phaseCreate:
		if res.Err != nil { // nothing written: a retry creates it again
			l.stats.CommitRetries++
			l.finishCommit(fmt.Errorf("%w: creating a segment: %v", ErrRetry, res.Err))
			return
		}
		c.phase = phaseDirSync
		l.issue(purposeCommit, disk.Op{Kind: disk.KindSyncDir, Name: l.cfg.Dir})
	case phaseDirSync:
		if res.Err != nil {
			l.poison(fmt.Errorf("directory sync for a new segment: %w", res.Err))
			l.finishCommit(l.poisoned)
			l.reportFailed() // nothing was written: nothing to cut
			return
		}
		if len(l.segs) == 0 {
			l.oldest = c.base // an empty log's first segment: recovery takes its base (R1, R8)
		}
		l.segs = append(l.segs, segment{name: segmentName(l.cfg.Dir, c.base), base: c.base})
		l.stats.SegmentsRolled++
		l.writeFrame()
	case phaseWrite:
		l.onWritten(res)
	case phaseSync:
		l.onSynced(res)
	case phaseVerify:
		l.onReadBack(res)
	case phaseCut, phaseCutSync:
		l.onCutStep(res)
	}
}

func (l *Log) writeFrame() {
	c, seg := l.commit, l.active()
	assert.That(seg.base <= c.base, "plog: commit lands below its segment's base offset")
	c.pos = seg.size
	c.phase = phaseWrite
	data := l.withZeros(seg, c.frame)
	c.written = len(data)
	l.issue(purposeCommit, disk.Op{Kind: disk.KindWriteAt, Name: seg.name, Off: c.pos, Data: data})
}

func (l *Log) onWritten(res disk.Result) {
	c := l.commit
	if res.Err != nil {
		l.cut() // a failed write may have stored part of the frame
		return
	}
	seg := l.active()
	seg.zeroEnd = max(seg.zeroEnd, c.pos+int64(c.written))
	if mutHWBeforeSync {
		// Deliberate bug: visible (and answered) before the fdatasync made it durable.
		l.issue(purposeDetached, disk.Op{Kind: disk.KindSync, Name: l.active().name})
		l.publish(nil)
		return
	}
	c.phase = phaseSync
	l.issue(purposeCommit, disk.Op{Kind: disk.KindSync, Name: l.active().name})
}

func (l *Log) onSynced(res disk.Result) {
	c := l.commit
	if res.Err != nil {
		// Never retried, never trusted: the kernel may have dropped the pages and marked
		// them clean. Refuse commits; cut the frame so that a reopen without a machine
		// crash does not find it in the page cache and expose what the device lacks.
		l.poison(fmt.Errorf("fdatasync of a commit: %w", res.Err))
		l.answerCommit(c.token, 0, 0, l.poisoned)
		c.answered = true
		l.cut()
		return
	}
	if mutSkipReadBack {
		l.publish(
			nil,
		) // deliberate bug: trusts the write without reading it back; nothing read, nothing cached
		return
	}
	l.readBack()
}

func (l *Log) readBack() {
	c := l.commit
	c.phase = phaseVerify
	// From the device, bypassing the page cache (Op.Device): the cache holds what was
	// written whatever the device stored.
	l.issue(
		purposeCommit,
		disk.Op{
			Kind:   disk.KindReadAt,
			Device: !mutReadBackCache,
			Name:   l.active().name,
			Off:    c.pos,
			Len:    len(c.frame),
		},
	)
}

// onReadBack compares what the device returns with what was written. A mismatch cannot
// tell a corrupted write from a read corrupted in passing; re-reading until one matches
// could accept a stored bit flip undone by a read flip, so any mismatch is treated as a
// bad write: the cost is one retried commit. A read error says nothing about the bytes,
// so it is retried.
func (l *Log) onReadBack(res disk.Result) {
	c := l.commit
	if res.Err != nil {
		if c.retries < l.cfg.ReadRetriesMax {
			c.retries++
			l.stats.ReadRetries++
			l.readBack()
			return
		}
		l.cut()
		return
	}
	if !bytes.Equal(res.Data, c.frame) {
		l.stats.ReadBackBad++
		l.cut()
		return
	}
	batches := make([]Batch, len(c.parts))
	rest := res.Data
	for i, part := range c.parts {
		bt, n, err := DecodeBatchFor(rest, l.cfg.Dir)
		assert.That(
			err == nil && n == int(part.size) && bt.BaseOffset == part.base &&
				len(bt.Entries) == int(part.count),
			"plog: a frame equal to the one encoded does not decode to it",
		)
		batches[i], rest = bt, rest[n:]
	}
	l.publish(batches)
}

// publish makes the commit visible: index it, advance the high-watermark, answer it.
// readBack is the batch decoded from the bytes the read-back returned, or nil when there
// was no read-back (the mutation builds). Only those bytes are cached: the cache then
// holds what the device gave back after the fdatasync, never the log's own copy of what
// it meant to write, so a build that skips the read-back caches nothing at commit and
// its readers still see what is on disk.
func (l *Log) publish(readBack []Batch) {
	c, seg := l.commit, l.active()
	assert.That(
		(c.base == l.hw || c.base > l.hw && seg.base == c.base && c.pos == 0) && c.pos == seg.size,
		"plog: publishing a commit that is not at the high-watermark",
	)
	pos := c.pos
	for i, part := range c.parts {
		ref := part
		ref.pos = pos
		pos += int64(ref.size)
		seg.batches = append(seg.batches, ref)
		if readBack != nil {
			l.cache.put(ref, readBack[i]) // the newest records: what consumers usually read next
		}
	}
	seg.size += int64(len(c.frame))
	seg.newestMs = max(seg.newestMs, c.commitMs)
	l.hw = c.base + uint64(c.count)
	l.stats.Commits++
	l.stats.Records += uint64(c.count)
	l.stats.BytesCommitted += uint64(len(c.frame))
	l.answerCommit(c.token, c.base, c.count, nil)
	l.commit = nil
}

// cut truncates the active segment back to the high-watermark's position and syncs that,
// so that nothing of the commit survives: a retry then lands at the same offsets.
func (l *Log) cut() {
	c := l.commit
	c.phase = phaseCut
	// Only published batches are cached, and they all lie below the high-watermark, so
	// this drops nothing; it makes sure no cached batch outlives the bytes being cut.
	l.cache.dropFrom(l.hw)
	if !mutZerosKept {
		l.active().zeroEnd = 0 // the cut takes any zeros too
	}
	l.issue(purposeCommit, disk.Op{Kind: disk.KindTruncate, Name: l.active().name, Off: c.pos})
}

func (l *Log) onCutStep(res disk.Result) {
	c := l.commit
	if res.Err != nil {
		l.poison(fmt.Errorf("cutting back a failed commit (%s): %w", res.Kind, res.Err))
		l.finishCommit(l.poisoned)
		l.reportFailed()
		return
	}
	if c.phase == phaseCut {
		c.phase = phaseCutSync
		l.issue(purposeCommit, disk.Op{Kind: disk.KindSync, Name: l.active().name})
		return
	}
	if l.poisoned != nil {
		l.finishCommit(l.poisoned) // the cleanup after a failed fdatasync is done
		l.reportFailed()
		return
	}
	l.stats.CommitRetries++
	l.finishCommit(ErrRetry)
}

// finishCommit answers the commit in flight with err unless it was answered already, and
// frees the slot.
func (l *Log) finishCommit(err error) {
	c := l.commit
	if !c.answered {
		l.answerCommit(c.token, 0, 0, err)
	}
	l.commit = nil
}
