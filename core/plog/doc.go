// Package plog is the partition log: the place where a message becomes real
// (commitDurable, stage 3 of the produce path). It is a deterministic state machine: it
// does no I/O, reads no clock and starts no goroutine. Work comes in as calls and
// completions; disk work goes out as disk.Op actions.
//
// # Driving it
//
//	l := plog.New(plog.Config{Dir: "parts/000000000000002a-3"})
//	l.Open(now)                                    // recovery: list, scan, cut, sync
//	for {
//		rd := l.Ready()
//		for _, op := range rd.Ops { shell.Submit(op) }     // in any order, concurrently
//		for _, c := range rd.Commits { dispatcher.CommitDone(c.Token, c.Err) }
//		for _, r := range rd.Reads { consumer.Answer(r.Token, r.Records, r.Err) }
//		if rd.Recovered != nil { accept commits and reads }
//		if rd.Failed != nil { commits are refused until a new Log reopens the directory }
//		switch ev := <-events; {                       // the shell's loop, not the core's
//		case commit:     l.Commit(now, token, entries) // one at a time per partition
//		case read:       l.Read(now, token, offset, max)
//		case completion: l.DiskDone(now, result)
//		case timer:      l.Tick(now)                   // at l.NextDeadline(): retention
//		}
//	}
//
// Ordering that matters is inside the machine, so any action in a Ready may be carried
// out at once: a segment is written only after its directory entry is durable; a sync is
// issued only after its write completed; the read-back only after the sync; a commit is
// answered only after its read-back matched; a segment is removed only when it is not the
// active one, and the next removal waits for the directory sync of the last.
//
// # commitDurable
//
// At most one commit is in flight (the dispatcher sends one batch per partition at a
// time; a second is a programmer error and panics). Its entries become ONE batch frame,
// and then:
//
//  1. the frame is written at the end of the active segment (after creating a new
//     segment, named by the high-watermark, and syncing the directory, when the active
//     one has passed SegmentBytesMax or none exists). A frame that would end past the
//     zeros written before carries PreallocBytes of zeros after it, in the same write,
//     so that the next commits' fdatasyncs commit no metadata (prealloc.go); recovery
//     keeps zeros past the last frame (R12), and a roll trims those of the segment it
//     leaves;
//  2. fdatasync;
//  3. the frame is read back and compared byte for byte with what was written (which
//     also proves its CRC32C);
//  4. only then is it indexed, the high-watermark advanced, and CommitDone answered.
//
// A failed write, a read-back that differs (silent write corruption; any difference,
// since a re-read could not tell a bad write from a bad read) or a read-back that fails
// ReadRetriesMax+1 times truncates the segment back to the high-watermark's position,
// syncs that cut, and answers ErrRetry: nothing of the commit is visible and a retry lands
// at the same offsets. A failed fdatasync (of the commit, of the cut, or of the directory
// for a new segment) poisons the log: the commit is answered ErrFailed, every later commit
// is refused with ErrFailed until the log is reopened, reads go on. The sync is never
// retried and trusted. After a failed commit fdatasync the log still cuts the frame and
// syncs the cut before it reports Failed, so a restart that finds the page cache intact
// does not expose bytes the device may lack. A new Log on the same directory in the same
// process (core/node's reopen of a failed partition) is given the old one's high
// watermark as Config.VerifiedEnd, and its recovery cuts every frame at or past it: those
// are of commits answered failed, already sent again.
//
// # Reads
//
// An in-memory index (per batch: base offset, count, segment, file position, frame size),
// built by recovery and by every commit, turns a read into one ReadAt of the frame holding
// the offset. The whole frame's CRC is checked and its base offset and count compared
// with the index; on a mismatch or a read error it is read again, up to ReadRetriesMax
// times (read corruption is transient in the fault model), and then answered ErrCorrupt:
// bytes that fail their check are never served. Only offsets below the high-watermark are
// served; below OldestOffset the answer is ErrRemoved, also for a read that was waiting
// for the disk when retention removed its segment. Reads run alongside each other (up
// to ReadsInFlightMax waiting for the disk) and alongside a commit: a commit only writes
// past the high-watermark's position and a cut only removes bytes past it. Reads of one
// batch that arrive while its frame is being fetched join that fetch.
//
// # The read cache
//
// The log keeps decoded batches that are known good, so that most reads need no disk op
// and no decode: the node reads a leased batch one record at a time, and consumers mostly
// read the newest records. A batch enters the cache
//
//   - when a commit publishes it, decoded from the bytes its read-back returned (the
//     device's answer after the fdatasync, equal byte for byte to what was written; a
//     build that skips the read-back has no such bytes and caches nothing at commit), and
//   - when a read fetched it and it passed its CRC and index check.
//
// A read whose batch is cached is answered in the same call (Ready's Reads), counted in
// Stats.ReadCacheHits; otherwise it is a miss and waits for the disk as above. The cache
// holds at most Config.ReadCacheBatchesMax batches and Config.ReadCacheBytesMax bytes
// (each batch is charged its frame plus its decoded entries), evicting the least
// recently used: a linked list, with a map used only for lookups, so eviction is the
// same in every run. A batch larger than the byte bound is never cached.
//
// What makes a cached batch right: a base offset names one batch for the life of a Log
// (batches are published only at the high-watermark, which only grows, and a cut only
// removes bytes past it), and a Log starts with an empty cache, so a restart or a crash
// never finds stale batches. Still, a read is served from the cache only after the same
// checks as a disk read (below the high-watermark, at or above OldestOffset, not in a
// hole) and only if the cached batch is the one the index holds; retention drops the
// batches of the segment it removes, and a cut drops anything at or above the
// high-watermark (there is never anything: only published batches are cached).
//
// Aliasing: the cached entries alias the frame buffer of the disk Result they were
// decoded from, which the log never writes and never hands out. Every answer is a copy
// (keys and payloads in one new buffer per answer) that belongs to the caller; writing
// into it cannot change what later reads are served.
//
// # Files
//
// Segments are dir/<base offset, 16 hex digits>.log; every batch in a segment has a base
// offset at or above the name, and segments follow each other without overlap. Retention
// (RetentionMs > 0) removes the oldest non-active segment once its newest commit is older
// than now - RetentionMs: Remove, then SyncDir, one segment at a time, advancing
// OldestOffset.
//
// # Batch frame format (on disk: do not change; add a format byte instead)
//
//	0        4        8   9           17      21             29
//	+--------+--------+---+-----------+-------+--------------+-------------------+
//	| crc32c | length |fmt| base off  | count | commit_ms    | entries ...       |
//	+--------+--------+---+-----------+-------+--------------+-------------------+
//	the first 9 bytes are core/frame's header (drawn there once: the crc32c covers
//	length, fmt and the body; length counts the body); all integers little endian.
//
//	entry (count times, back to back, filling the body exactly):
//	key_len u32 (0xFFFFFFFF: no key) | payload_len u32 | key | payload
//
//	fmt 1: the crc32c starts from 0 (written before tags; still read).
//	fmt 2: fmt 1 tagged with its partition: the crc32c starts from the crc32c of the log
//	    directory's last element ("<topic id>-<index>"). The log writes only these. A
//	    misdirected write can land a frame of another partition here whole and valid,
//	    and nothing else in a frame names its log; tagged, it fails its check (damage,
//	    rows R3-R5) instead of being taken as this log's: cluster seed 8865, where
//	    recovery took one in a torn tail, with offsets of another epoch, and made every
//	    offset below them a hole.
//
// The keyed envelope of each entry is (key, commit time, payload); one commit has one
// commit time, so it is stored once per batch. The offsets of a batch are base_off to
// base_off+count-1. Bounds, which the decoder also enforces: count 1 to EntriesMax, a
// frame at most BatchBytesMax, a key at most KeyBytesMax, a payload at most
// PayloadBytesMax.
//
// # Recovery decision table
//
// Open lists the directory and scans every segment in offset order, frame by frame, in
// reads of RecoveryReadBytes (a larger frame is read whole). The expected offset starts
// at the oldest segment's base. Each row is tested in recover_test.go.
//
//	row  condition
//	     -> action
//	R1   no segment file
//	     -> empty log: high-watermark and oldest 0
//	R2   frame CRC-valid, base offset = the expected offset
//	     -> keep it: index it, expect the offset after it
//	R3   frame damaged (zeroed, short, length, CRC, format, body, base offset not the
//	     expected one), or a read fails
//	     -> re-read it, up to ReadRetriesMax times: a read can be corrupted or fail in passing
//	R4   still damaged; a CRC-valid frame with a base offset at or above the expected one
//	     follows in the segment (the earliest any of ReadRetriesMax+1 search passes finds)
//	     -> keep it and what follows; offsets in between are a hole (reads get ErrCorrupt);
//	        the damaged bytes are never served
//	R5   still damaged in the last segment; no pass finds a valid frame after it
//	     -> torn tail: truncate there and sync; it was never acknowledged
//	R6   still damaged in an older segment; nothing valid follows
//	     -> keep the bytes, do not cut (they were synced and may have been acknowledged)
//	R7   end of a segment at a frame boundary
//	     -> clean end: next segment
//	R8   a segment's base offset is above the expected offset
//	     -> the offsets in between are a hole; go on
//	R9   a segment's base offset is below the expected offset
//	     -> fail: overlapping segments, which no sequence of commits, crashes and cuts makes
//	R10  a read fails with an I/O error ReadRetriesMax+1 times
//	     -> fail: the node stops
//	R11  after the sync below, the newest frame of the last segment does not read back
//	     intact in ReadRetriesMax+1 reads (a silently corrupted write that was never
//	     synced and that a read corrupted in passing made look valid)
//	     -> cut it and sync, then check the frame before it the same way: it was never
//	        acknowledged (acknowledged frames were read back intact after their own sync)
//	R12  damage where one read shows only zeros to the end of the segment (space never
//	     written: prealloc.go)
//	     -> the end of the segment; keep the zeros (the next commits write over them)
//	--   a file whose name is not <16 hex digits>.log
//	     -> ignored, left alone
//
// Then, before Recovered is reported, the last segment is synced (after its cut, if R5)
// and so is the directory: a restarted process may see frames in the page cache that were
// written but never synced, and exposing them and losing them in a later crash would
// move the high-watermark back. Then the newest frame is read back (R11), as commitDurable
// does after its fdatasync: it is the only frame that may have been written and not
// synced, and the scan's read of it proves little (a corrupted write and a read corrupted
// in passing can cancel out). The recovered high-watermark is the expected offset after
// the last segment; OldestOffset is the first segment's base.
//
// # The high-watermark never moves backwards
//
// Within a run it only grows. Across restarts: every offset below a reported high-watermark
// is in a frame that was fdatasynced and read back intact (a commit), or that recovery
// found CRC-valid, synced and, for the newest, read back intact. A crash keeps synced
// bytes, R5 cuts only bytes past the last valid frame, and R4/R6/R8 never cut. So a
// recovered high-watermark is at least every high-watermark reported before. One double
// fault is outside this: a failed fdatasync followed by a process restart without a machine
// crash, before the log has cut what that sync covered (the process died first, perhaps
// before it even heard of the failure; or a recovery's own sync failed and the next
// recovery ran at once). The page cache then still shows frames the device lacks, a later
// fdatasync does not write them (they are marked clean), so the next Open exposes them and
// a later crash takes them back. No acknowledged commit is ever among them: each was synced
// before it was answered.
package plog
