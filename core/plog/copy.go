package plog

import (
	"fmt"
	"sort"
)

// Copies: a partition moved to another node (core/node move.go) is copied there batch by
// batch, each at the offsets and with the commit time it has at the source, so that a
// replay of an offset returns the same record before and after the move.

// CopyBatch is one batch of another copy of this partition (a move's source), at its own
// offsets (Base onwards) and with its own commit time.
type CopyBatch struct {
	Base     uint64
	CommitMs int64
	Entries  []Entry
}

// CopyBytesMax bounds the encoded frames of one CommitCopy: one write and one read-back.
const CopyBytesMax = BatchBytesMax

// CommitCopy appends batches copied from another copy of this partition, at their own
// offsets and commit times, through commitDurable as Commit does: one write of their
// frames, one fdatasync, one read-back compared byte for byte, and only then are they
// visible. The answer is one CommitDone with the same token (BaseOffset the first batch's
// base, Count all their records). The batches follow each other without a gap, and the
// first starts at or above the high-watermark. Above it (offsets the source no longer
// holds, or a hole of its own) the offsets in between become a hole here too: the batches
// start a new segment named by their first base (recovery row R8), and reads of the
// offsets in between get ErrCorrupt, as at the source.
//
// Like Commit: one commit in flight at a time, refused while recovering or poisoned, and
// over a limit (no batch, an empty batch, a batch over Commit's limits, more than
// CopyBytesMax in all) answered at once with nothing changed.
func (l *Log) CommitCopy(nowNs int64, token uint64, batches []CopyBatch) {
	if l.refuseCommit(token, l.checkCopy(batches)) {
		return
	}
	c := &inflightCommit{token: token, base: batches[0].Base}
	for _, b := range batches {
		start := len(c.frame)
		c.frame = AppendBatchFor(c.frame, l.cfg.Dir, b.Base, b.CommitMs, b.Entries)
		c.parts = append(c.parts, batchRef{base: b.Base, count: uint32(len(b.Entries)),
			size: uint32(len(c.frame) - start)})
		c.count += len(b.Entries)
		c.commitMs = max(c.commitMs, b.CommitMs)
	}
	l.startCommit(c)
}

// checkCopy answers whether batches make one CommitCopy: contiguous, from the
// high-watermark or above, each within Commit's limits, CopyBytesMax in all.
func (l *Log) checkCopy(batches []CopyBatch) error {
	if len(batches) == 0 {
		return ErrEmpty
	}
	next, total := batches[0].Base, 0
	if next < l.hw {
		return fmt.Errorf("%w: a copy from offset %d below the high-watermark %d", ErrTooLarge,
			next, l.hw)
	}
	for _, b := range batches {
		size, err := BatchBytes(b.Entries)
		if err != nil {
			return err
		}
		if b.Base != next {
			return fmt.Errorf("%w: a copied batch at %d, not %d", ErrTooLarge, b.Base, next)
		}
		next += uint64(len(b.Entries))
		if total += size; total > CopyBytesMax {
			return fmt.Errorf("%w: copied batches of more than %d bytes", ErrTooLarge, CopyBytesMax)
		}
	}
	return nil
}

// NextHeld returns the first offset at or above off that a batch holds, or the
// high-watermark when none does: a copy that meets a hole (a read answered ErrCorrupt for
// a damaged range) goes on from there. Below OldestOffset it starts at OldestOffset.
func (l *Log) NextHeld(off uint64) uint64 {
	off = max(off, l.oldest)
	if off >= l.hw {
		return l.hw
	}
	i := max(0, sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > off })-1)
	for ; i < len(l.segs); i++ {
		bs := l.segs[i].batches
		j := sort.Search(len(bs), func(j int) bool { return bs[j].base+uint64(bs[j].count) > off })
		if j < len(bs) {
			return max(bs[j].base, off)
		}
	}
	return l.hw
}
