// Package nodesim runs a whole single-node broker (core/node) in the simulator: seeded
// producers (single and batch produces with keys, pinned partitions or neither),
// consumers (consumes with leases of any partition or of one, long polls, acks, nacks,
// extends, late acks, leases left to expire, replays by offset, reads of the topics'
// stats), disk ops with drawn latencies completing in any order, a short retention in a
// quarter of the seeds (small segments, so retention removes records during the run),
// and the disk faults of DESIGN.md section 3: crashes at any point (inside commitDurable
// too), torn and garbage sectors, silent write corruption, failed fsyncs, read errors and
// bit flips; and, in some seeds, a process crash placed between a commit's write and its
// fdatasync with that write corrupted on the device (incommit.go: recovery's row R11).
//
// Checks, against durable images and what the clients saw (package invariants); every
// violation starts with the check's name:
//   - invariant 1 (with 5): every 202-acknowledged message is in the durable WAL at or
//     above its durable checkpoint, or CRC-valid in a durable partition log — after every
//     crash, every few steps, and at the end (unless retention may have removed it);
//   - invariant 3: every record read (delivery or replay) was produced, byte for byte,
//     and not by a produce that was definitely refused;
//   - invariant 8: it comes from the topic it was produced to, on its pinned partition
//     or its key's FNV-1a partition (a single node never reroutes), with its key, and
//     from the partition and offset a pinned consume or a replay asked for;
//   - invariant 4: an offset never serves two messages, and a delivered offset stays in
//     the durable log; a 410 or an oldest offset never covers a record committed within
//     the topic's retention of now;
//   - invariant 9 (leases.go): while a lease certainly holds (taken after the consume was
//     sent, so until that time plus the visibility timeout, or an extend plus it) nobody
//     gets its record; an ack, extend or nack of a lease that certainly holds is
//     answered OK, and of one that ended (acked, released, lost with the process,
//     expired, or its record leased again) ErrLeaseGone; a record acked OK is delivered
//     again only after a crash within the ack-flush window (ackWindowNs) or after a
//     crash that followed damage to that partition's ack files after the ack
//     (sim.Disk.Damage; core/lease doc.go states the promise); every record released
//     or left to expire is delivered again by the end of the heal phase unless acked or
//     removed by retention;
//   - invariant 10: every duplicate has a cause, counted by cause in the stats: expiry,
//     nack, crash (the lease died with the process), ack window, ack damage, or a second
//     offset re-dispatched after a crash within RedispatchBoundNs of its first delivery;
//   - invariant 2, after a heal phase (faults off, producers stopped, consumers acking
//     everything): every acknowledged message is delivered at least once within a bounded
//     simulated time (unless retention may have removed it: produced more than the
//     retention ago, on a partition whose stats or a 410 showed removed records);
//   - linearizability: porcupine over each partition's reads, absent replays and high
//     watermarks (invariants.PartitionHistory);
//   - vacuous: a seed that acknowledges or delivers fewer than AckedFloor or
//     DeliveredFloor messages proves too little and fails;
//   - reclaim (reclaim.go; half the seeds, Options.DoomAtNs): a topic created, filled and
//     deleted under the faults; no directory of a clients' topic is ever removed, and
//     after the heal none of the deleted one is left (within invariants.ReclaimBoundNs).
//   - poison (poison.go): the node never fails for one partition's failure; a partition is
//     reopened only after an op on its files failed since its last reopen or the process
//     start; the dispatcher reroutes a partition's records (a pinned or keyed message then
//     lands on a sibling, invariant 8 allows it) only after such a failure; after the heal
//     no partition stays failed (invariants.ReopenBoundNs). A reopen explains a
//     redelivery (its leases are gone) and an ack lost with it.
//   - nospace: the node never fails for its ingress WAL finding the device full
//     (FillProb, NoSpaceProb): produces are refused (507, a definite refusal, never
//     delivered) until a write fits. Producers refused 507 or 503 wait retryAfterNs; the
//     operator frees a device full for invariants.FullNsMax (the node no longer dies of
//     it); a crash while the WAL's checkpoint writes found no space explains a second copy
//     at any distance (the durable checkpoint lagged).
//
// Stats count the faults that fired and each checker's work (TestSeedsCoverFaultsAndCheckers).
// Run(Draw(seed)) is a pure function of the seed; every processed event is folded into
// a trace hash.
package nodesim
