package plog

import "github.com/narad/narad/core/disk"

// Preallocation. An fdatasync after an append that grows a file must also commit the
// file's new size and block allocation: on ext4 that is a journal commit, shared by every
// file of the file system, which costs about twice the data write alone and serialises
// the syncs of concurrent logs (docs/benchmarks.md, issue 16). A sync of bytes written
// over blocks the file already holds, initialised, commits no metadata.
//
// So a commit whose frame would end past the zeros written before writes
// Config.PreallocBytes of zeros after its frame, in the same write: one op, so nothing
// else writing the segment can race it (a read never goes past the high-watermark's
// position), and the commit's own fdatasync makes the zeros durable with the frame. The
// next commits overwrite those zeros and their syncs write data only. The read-back covers
// the frame only. A cut takes the zeros with the frame, and the next write lays them again.
//
// Recovery keeps them (row R12): damage where a read shows only zeros to the end of the
// segment is space never written, decided on that one read, since no fault in the model
// makes synced frames read as zeros to the end of a file (a read corrupted in passing
// flips bits; a lost write is caught by the read-back before anything is acknowledged).
// Zeros with other bytes among them (a torn write, a corrupted write that flipped some
// zeros) are damage as before: R5 cuts them in the last segment, and R6 keeps them in an
// older one. A roll trims the zeros of the segment it leaves, so that they are not
// searched at every recovery: a truncate to the segment's size, then a sync of it, that
// no commit waits for. Whatever becomes of them is harmless: the cut removes zeros only,
// and a trim that fails or that a crash takes back leaves zeros that R12 or R6 keeps.

// withZeros answers what the write of frame at the end of seg stores: the frame alone, or
// the frame and PreallocBytes of zeros when it would end past seg.zeroEnd.
func (l *Log) withZeros(seg *segment, frame []byte) []byte {
	if l.cfg.PreallocBytes <= 0 || seg.size+int64(len(frame)) <= seg.zeroEnd {
		return frame
	}
	data := make([]byte, len(frame)+int(l.cfg.PreallocBytes))
	copy(data, frame)
	return data
}

// trimZeros cuts the zeros past the end of the active segment before a roll leaves it.
func (l *Log) trimZeros() {
	if len(l.segs) == 0 {
		return
	}
	seg := l.active()
	if seg.zeroEnd > seg.size {
		seg.zeroEnd = 0
		id := l.issue(purposeTrim, disk.Op{Kind: disk.KindTruncate, Name: seg.name, Off: seg.size})
		l.trims[id] = seg.name
	}
}

// trimStep syncs a trim's truncate once it is done; the sync's outcome changes nothing.
func (l *Log) trimStep(res disk.Result) {
	name, ok := l.trims[res.ID]
	delete(l.trims, res.ID)
	if ok && res.Err == nil {
		l.issue(purposeTrim, disk.Op{Kind: disk.KindSync, Name: name})
	}
}
