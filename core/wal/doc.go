// Package wal is the ingress write-ahead log of a node: the place a produce becomes safe
// before it is answered 202. It is a deterministic state machine: it does no I/O, reads no
// clock and starts no goroutine. Work comes in as events and goes out as actions.
//
// # Driving it
//
//	l := wal.New(wal.Config{})
//	l.Open(now)                                  // recovery starts: ops to list and read
//	for {
//		rd := l.Ready()
//		for _, op := range rd.Ops { shell.Submit(op) }   // in any order, concurrently
//		for _, d := range rd.Done { answer(d.Token, d.Seq, d.Err) }
//		if rd.Recovered != nil { replay(rd.Recovered.Records) }
//		if rd.Failed != nil { stop accepting; restart the node to recover }
//		switch ev := <-events; {                     // the shell's loop, not the core's
//		case append:     l.Append(now, token, record)
//		case completion: l.DiskDone(now, result)
//		case timer:      l.Tick(now)                 // at l.NextDeadline()
//		case dispatched: l.SetCheckpoint(now, seq)
//		}
//	}
//
// Step(now, event) does the same through one entry point. Ordering that matters is
// already inside the machine: a sync is issued only after its write completed, an append
// is answered only after the sync covering it completed, a segment is written only after
// its directory entry is durable, and a segment is removed only after a checkpoint past it
// is durable. Any action in a Ready may therefore be carried out at once.
//
// # Group commit
//
// At most one group (one write, one fdatasync, one read-back) is in flight. Appends that
// arrive meanwhile are encoded into a staging buffer; when the group's bytes are synced
// and read back identical to what was written, every append of the group is answered and
// the whole staging buffer goes out as the next group. The read-back catches a write that
// reported success but stored other bytes (DESIGN.md section 3: silent write corruption);
// such a group is never answered durable and the WAL fails like on an fsync error. Under load
// a group holds everything that arrived during one fdatasync, so the cost per record tends
// to zero. An idle WAL flushes the first append at once; the 10 ms backstop deadline only
// bounds a missed wakeup. Once staged, an append cannot be cancelled: reporting failure
// for a record that became durable would make a retrying client duplicate it.
//
// # Failure is sticky
//
// A failed write, fdatasync, create, remove or directory sync turns the WAL failed:
// every append waiting or arriving is answered ErrFailed, nothing the failed sync covered
// is ever answered durable, and the sync is never retried (Linux marks the pages clean
// after reporting the error once). The node restarts and recovers from what is on disk.
//
// Except a full device: a group write or a checkpoint write that fails with
// disk.ErrNoSpace leaves the WAL working (nospace.go): the group is cut back, synced and
// refused with ErrNoSpace (its seqs given again), appends are refused for NoSpaceRetryNs,
// and a checkpoint write is tried again after it.
//
// # Files
//
// Segments are named dir/<first seq, 16 hex digits>.seg; every record in a segment has a
// seq at or above the name. The checkpoint (first seq not yet dispatched) lives in
// dir/checkpoint in two alternating slots (checkpoint.go), with the dispatcher's
// skip-set above it (Skip: which records above the checkpoint are done already, bounded by
// CheckpointPendingMax; SetSkip). It is made durable lazily, one write and one fdatasync
// at most CheckpointSyncIntervalNs after a move, and then every segment wholly below it
// is removed. Recovery reports the skip-set (Recovery.Skip) and never reuses a seq it
// calls done; a slot written before the skip-set existed (format 1) recovers with none.
// An active segment past SegmentRotateBytes whose records are all dispatched is rotated
// so that it can be reclaimed; past SegmentBytesMax it is rotated regardless.
//
// A group write whose frames would end past the zeros written before carries
// PreallocBytes of zeros after them (prealloc.go): the groups that follow overwrite
// blocks the segment already holds, so their fdatasync commits no metadata. Recovery
// keeps the zeros past the last frame (R10).
//
// # Record format (on disk: do not change; add a format byte instead)
//
// A record is one frame of core/frame (crc32c u32 | length u32 | fmt u8 | body), whose
// layout, checksum and decoding outcomes are drawn there once. Integers little endian.
//
//	body, fmt 1:
//	seq u64 | timestamp_ms i64 | incarnation u64 | partition u32 |
//	topic_len u16 | key_len u32 (0xFFFFFFFF: no key) | topic | key | payload (the rest)
//
// # Recovery decision table
//
// Open lists the directory, reads the checkpoint, then scans every segment in seq order,
// frame by frame. Each row is tested in recover_test.go.
//
//	row  condition                                              action
//	R1   no checkpoint file, or one never written (all zero)    start at the oldest record
//	R2   a checkpoint slot is valid                             start at the newest valid slot
//	                                                             (format 2: with its skip-set)
//	R3   checkpoint file has no valid slot after re-reads       start at the oldest record
//	R4   frame decodes, CRC valid, seq at or above the expected  keep it
//	R5   frame damaged (CRC, length, zeros, seq going back)     re-read up to ReadRetriesMax
//	                                                             times: reads can be corrupted
//	                                                             in passing
//	R6   still damaged, a valid frame with a later seq follows  skip to it, count it corrupt;
//	     (R6 and R7: the rest of the segment is read             never serve the damaged bytes
//	     ResyncConfirmReads more times; the earliest valid
//	     frame any read showed decides)
//	R7   still damaged, nothing valid follows                   torn tail: truncate there and
//	                                                             sync (it was never acknowledged)
//	R8   end of file at a frame boundary                        clean end
//	R9   no segment at all                                      create the first one
//	R10  damage where one read shows only zeros to the end of     the end: keep the zeros
//	     the segment (space never written: prealloc.go)           (the next groups write
//	                                                             over them)
//	--   a read fails with an I/O error ReadRetriesMax times    recovery fails (node stops)
//
// A torn tail holds only bytes that were never covered by a successful fdatasync, so
// they were never acknowledged; cutting it loses nothing that was answered 202.
package wal
