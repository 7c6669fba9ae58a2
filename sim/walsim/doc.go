// Package walsim runs one node's ingress WAL in the simulator: a seeded workload of
// concurrent appends (each client waits for its answer, then appends again), disk ops with
// drawn latencies completing in any order, a stand-in dispatcher moving the checkpoint,
// fsync failures, read and write faults, crashes and restarts, and bit rot placed in an
// acknowledged record at a crash (rot.go). After every step that can
// change the durable image it checks invariants 1 and 5 (package invariants) against the
// simulated disk's durable image; after every recovery it checks that every acknowledged
// record at or above the checkpoint came back byte for byte and that nothing came back that
// was never appended. A run ends with a heal phase: faults off, clients stop, one last
// crash and recovery, and one append that must be acknowledged.
//
// It is driven by Run(Draw(seed)); everything, including the options, comes from the
// seed, so a failing seed reproduces from its number alone. Every processed event is
// folded into a trace hash: the same seed gives the same hash in any process.
package walsim
