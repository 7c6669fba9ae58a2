// Package lease is the consume leases of one partition, queue-style (like SQS): a consume
// takes a lease on the lowest available record for the topic's visibility timeout and
// gets a receipt; ack settles it, nack releases it, extend renews it, and a lease whose
// deadline passes makes the record available again. It is a deterministic state machine:
// it does no I/O, reads no clock and starts no goroutine (DESIGN.md sections 1, 2, 6).
//
// # Driving it
//
//	m := lease.New(lease.Config{Dir: "acks/000000000000002a-3"}, rand.Fork())
//	m.Open(now)                                   // recovery: list and read the ack files
//	for {
//		rd := m.Ready()
//		for _, op := range rd.Ops { shell.Submit(op) }  // in any order, concurrently
//		if rd.Recovered != nil { serve consumes }
//		if rd.Failed != nil { stop the node: restart to recover (see Failure) }
//		switch ev := <-events; {                    // the shell's loop, not the core's
//		case committed:  m.SetHighWatermark(hw)     // also after the partition log recovers
//		case retention:  m.SetOldest(oldest)
//		case consume:    rs := m.Lease(now, max)    // synchronous, no disk
//		case ack:        err := m.Ack(now, off, nonce)    // or Nack, Extend
//		case completion: m.DiskDone(now, result)
//		case timer:      m.Tick(now)                // at m.NextDeadline()
//		case long poll:  if m.Available(now) { wake it }
//		}
//	}
//
// Lease, Ack, Nack and Extend answer at once, from memory. Only acks are persisted;
// leases, nacks and extends live in memory, so a crash makes every leased record
// deliverable again.
//
// # States of an offset
//
// Offsets are 0, 1, ... below the high-watermark HW, which only the owner moves (forward).
// An offset at or above Oldest (retention) is in one of four states:
//
//	acked       below the floor, or in the acked set above it: never leased again
//	leased      in the lease map and the deadline heap, with a nonce and a deadline
//	released    nacked or expired: in the released heap, leased again first
//	fresh       at or above the cursor and not acked: never leased since recovery
//
// Available = released, or fresh and below HW. Every released offset lies below the
// cursor, so "lowest available first" is: pop the released heap, else take the cursor.
// An expired lease is released lazily by whichever call comes first at or after its
// deadline (Lease, Ack, Nack, Extend, Available, Tick); a receipt is honoured only while
// its offset's lease holds its nonce, so after expiry, ack, nack, redelivery to someone
// else, or retention, the old receipt gets ErrGone (API 410).
//
// # Bounds
//
//	leases, deadline heap   InFlight <= MaxInFlight (a consume at the cap gets nothing)
//	released heap + leases  <= the largest MaxInFlight set since recovery: a fresh offset
//	                        is leased only when the released heap is empty and the leases
//	                        are under the cap, and nack/expiry only move a lease over
//	acked set               every acked offset lies in [floor, floor+AckWindowMax): a fresh
//	                        offset is leased only below floor+AckWindowMax (overflow: the
//	                        consume gets nothing new until the floor moves; a record held
//	                        or failing forever stalls the partition after AckWindowMax
//	                        more records, the price of bounded memory). After a restart
//	                        with a smaller window it holds what recovery found, at most
//	                        AckSpanMax offsets past the floor
//	pending acks            <= 2 x acked set + 256: offsets the floor covers are dropped
//	one flush               <= acked set offsets, in frames of FrameOffsetsMax
//	acks.log                <= LogBytesMax + one flush, then compacted
//	recovery reads          <= RecoveryBytesMax per file, in RecoveryReadBytes chunks
//
// Costs: Lease, Ack, Nack, Extend O(log InFlight); the floor and the cursor move over
// each acked offset once (amortised O(1)); a flush sorts its batch (O(log n) per ack);
// SetOldest scans the leases only when retention passes unacked offsets.
//
// Deliveries are counted per offset while it is leased or released (Receipt.Deliveries,
// Stats.Redeliveries); the count is memory-only and starts again at a restart.
//
// # Persistence (at-least-once)
//
// An ack is answered at once and written later: acks are appended to <dir>/acks.log in
// batches, one write and one fdatasync per flush, at most one flush in flight. A batch is
// written AckFlushIntervalNs after its first ack, or when the flush or compaction in
// flight completes if that is later, or at once when a full frame (FrameOffsetsMax acks)
// waits. The interval is measured on the readings the manager is given: when the clock
// is stepped back, the pending deadline moves back with it (observe, persist.go), so an
// ack answered after the step is written at most AckFlushIntervalNs after its answer, and
// one answered before it at most AckFlushIntervalNs after the first reading past the
// step. A crash loses the acks not yet flushed: their records are delivered again (a
// duplicate, never a loss). Stats.AcksDurable says how many of the acks accepted, in
// order, are durable. Every frame states facts that were true when it was encoded (these
// offsets are acked; every offset below the floor is acked or removed), so any subset of
// frames recovers a correct, if older, state: recovery never invents an ack.
//
// The true promise of an ack answered OK, then: it is delivered again only (1) after a
// crash within the ack-flush window (AckFlushIntervalNs, then the ops a flush may wait
// for: the flush in flight and a compaction), including the crash that follows a failed
// write, fdatasync, create, rename or directory sync (Failure is sticky: the node stops),
// or (2) after a machine crash that follows a silent damage to the device bytes of this
// partition's ack files made after the ack: a write the disk reported done but stored
// corrupted, not at all or at another place, or another file's misdirected write landing
// on unsynced bytes of acks.log. Such a frame fails its CRC at recovery (rows S3, L4,
// L5) and its acks (a damaged snapshot: all it held) are delivered again, which
// at-least-once allows. Flushes are not read back from the device, so nothing detects
// the damage earlier; surviving it would need a device read-back and a rewrite per flush.
// The simulators check exactly this promise (sim.Disk.Damage of the ack directory).
//
// # Compaction
//
// When acks.log passes LogBytesMax after a flush, with nothing in flight, the whole acked
// state (floor and the acked set, pending acks included) becomes a snapshot:
//
//	1 create acks.snap.tmp        crash: log intact; the tmp file is removed (T1)
//	2 write the snapshot          crash: same
//	3 fdatasync acks.snap.tmp     crash: same
//	4 rename to acks.snap         crash: old snap + log, or new snap + log (new snap holds
//	                              everything the log does): both hold every durable ack
//	5 fsync the directory         the snapshot is durable: AcksDurable covers it
//	6 create acks.log (replace)   crash: old log or empty log, the snapshot covers both
//	7 fsync the directory         the fresh log's entry is durable before any frame goes in
//
// Flushes wait from 1 to 7 (acks meanwhile stay pending), so no frame is ever written to a
// log that a crash could swap for the old one, and the old log is replaced only once a
// durable snapshot holds everything in it.
//
// # Failure is sticky
//
// A failed write, fdatasync, create, rename or directory sync turns persistence failed:
// Ready reports Failed once, nothing is written again and no fdatasync is retried (Linux
// marks the pages clean after reporting the error once). Leases keep working, and an ack
// given after the failure still answers nil: the record is settled in memory and this
// process will not deliver it again; it may be delivered again after the restart that the
// node does to recover, which at-least-once allows. Answering ErrGone instead would be
// wrong (the lease was valid) and answering 500 would make clients retry an ack that
// took effect. A recovery that fails reports Failed and never Recovered.
//
// # File formats (on disk: do not change; add a format byte instead)
//
// acks.log is a sequence of frames; acks.snap is exactly one frame. Each is a frame of
// core/frame (crc32c u32 | length u32 | fmt u8 | body), whose layout, checksum and
// decoding outcomes are drawn there once. Integers little endian.
//
//	fmt 1, ack batch (acks.log):
//	floor u64 | count u32 | offset u64 x count
//	    every offset below floor is acked (or removed); offsets are acked, strictly
//	    increasing, in [floor, floor+AckSpanMax); count <= FrameOffsetsMax (8192)
//
//	fmt 2, snapshot (acks.snap, nothing after the frame):
//	floor u64 | nbits u32 | bitmap: (nbits+7)/8 bytes
//	    bit i (byte i/8, bit i%8, least significant first) set: offset floor+i is acked;
//	    nbits <= AckSpanMax; the last bit is set when nbits > 0, bits past nbits are zero
//
//	fmt 3 and 4: fmt 1 and 2, tagged with their partition: the crc32c starts from the
//	    crc32c of the ack directory's last element ("<topic id>-<index>") instead of 0.
//	    The Manager writes only these and reads all four; a frame of another partition,
//	    which a misdirected write can land here whole and valid, fails its check
//	    (damage, rows S3, L3-L5) instead of adding that partition's acks and floor.
//
// # Recovery decision table
//
// Open lists the directory, reads acks.snap, then acks.log, whole, in chunks. The floor
// and the acked set are the union of every fact read (floors take the maximum); then the
// floor rises to Oldest and the cursor starts at the floor, so every offset at or above it
// that is not acked is available again. Each row is tested in recover_test.go.
//
//	row  condition                                           action
//	S1   no acks.snap                                        start from floor 0
//	S2   acks.snap decodes and its CRC holds                 start from its floor and set
//	S3   acks.snap fails its check after ReadRetriesMax      ignore it: its acks may be
//	     re-reads (never a crash: it is renamed in synced)   delivered again, none invented
//	T1   acks.snap.tmp exists                                remove it: a compaction
//	                                                         crashed before its rename was
//	                                                         durable; the log holds all
//	L1   no acks.log                                         create it, fsync the directory
//	L2   a frame decodes and its CRC holds                   apply it
//	L3   a frame is damaged (CRC, length, zeros, short)      re-read from there, up to
//	                                                         ReadRetriesMax times: reads
//	                                                         can be corrupted in passing
//	L4   still damaged, a valid frame follows (in any of     skip to it (the damaged
//	     the reads: a frame valid once is a frame boundary)  frame's acks may be
//	                                                         redelivered); compact once
//	                                                         recovered, so the damage
//	                                                         leaves the files
//	L5   still damaged, nothing valid follows                torn tail: truncate there and
//	                                                         fdatasync (never flushed whole)
//	L6   end of file at a frame boundary                     clean end
//	F1   a read fails ReadRetriesMax+1 times, or a file      recovery fails (node stops)
//	     is over RecoveryBytesMax
//	R1   always, last: fdatasync acks.log (unless L5 cut   what was read is durable: after
//	     and synced it) and fsync the directory            a process crash the page cache
//	                                                        may show an unsynced flush or a
//	                                                        create whose directory sync
//	                                                        never ran (a machine crash would
//	                                                        drop acks.log, every ack flushed
//	                                                        into it since: cluster seed 69)
//
// A torn tail holds only bytes of a flush whose fdatasync never returned, or returned an
// error that stopped persistence, so cutting it loses no ack counted in AcksDurable.
package lease
