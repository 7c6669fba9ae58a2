package wal

import "slices"

// Preallocation. An fdatasync after an append that grows a file must also commit the
// file's new size and block allocation: on ext4 that is a journal commit, shared by every
// file of the file system, which costs about twice the data write alone and serialises
// the syncs of concurrent logs (docs/benchmarks.md, issue 16). A sync of bytes written
// over blocks the file already holds, initialised, commits no metadata.
//
// So a group write whose frames would end past the zeros written before carries
// Config.PreallocBytes of zeros after its frames, in the same write: one op, so no other
// write of the segment can race it, and the group's own fdatasync makes the zeros durable
// with the frames. The next groups overwrite those zeros and their syncs write data only,
// until the frames reach the end of the zeros again. The read-back covers the frames only.
//
// Recovery keeps them (row R10): damage where a read shows only zeros to the end of the
// segment is space never written, decided on that one read, since no fault in the model
// makes synced frames read as zeros to the end of a file (a read corrupted in passing
// flips bits; a lost write is caught by the read-back before anything is acknowledged).
// The first groups after it write over them. Zeros with other bytes among them (a torn
// write, garbage after a crash) are damage as before: R7 cuts them, zeros and all, and
// the next group lays zeros again.

// withZeros answers what the group write of l.inflightBuf at the end of seg stores: the
// frames alone, or the frames and PreallocBytes of zeros when they would end past
// seg.zeroEnd. The zeros live in the spare capacity of l.inflightBuf, so a warm log
// allocates nothing for them.
func (l *Log) withZeros(seg *segment) []byte {
	frames := len(l.inflightBuf)
	if l.cfg.PreallocBytes <= 0 || seg.size+int64(frames) <= seg.zeroEnd {
		return l.inflightBuf
	}
	n := frames + int(l.cfg.PreallocBytes)
	buf := slices.Grow(l.inflightBuf, int(l.cfg.PreallocBytes))[:n]
	clear(buf[frames:])
	l.inflightBuf = buf[:frames]
	return buf
}
