// Package nodesim runs a whole single-node broker (core/node) in the simulator: seeded
// producers (single and batch produces with keys, pinned partitions or neither),
// consumers (long polls, acks, nacks, leases left to expire), disk ops with drawn
// latencies completing in any order, and the disk faults of DESIGN.md section 3: crashes
// at any point (inside commitDurable too), torn and garbage sectors, silent write
// corruption, failed fsyncs, read errors and bit flips.
//
// Checks, against durable images and client histories only (package invariants):
//   - invariant 1 (with 5): every 202-acknowledged message is in the durable WAL at or
//     above its durable checkpoint, or CRC-valid in a durable partition log — after every
//     crash, every few steps, and at the end;
//   - invariant 3: every delivered message was produced, byte for byte;
//   - invariant 4: a record once delivered at an offset is never lost from its partition
//     (the recovered log holds it);
//   - invariant 2, after a heal phase (faults off, producers stopped, consumers acking
//     everything): every acknowledged message is delivered at least once within a bounded
//     simulated time. Duplicates are counted, not failures.
//
// Run(Draw(seed)) is a pure function of the seed; every processed event is folded into
// a trace hash.
package nodesim
