// Package sim is Narad's deterministic simulator: the in-memory stand-ins for the shells
// (disk, and later network and clock) that let many core nodes run in one goroutine under a
// single seed, with faults injected from that seed. Same seed and same calls give the same
// run, byte for byte: every random draw comes from a core/rng stream handed in by the
// caller, nothing reads the clock, and no map is iterated in an order that reaches an
// output or a draw.
//
// The simulated disk (Disk, an implementation of core/disk.FS) is the executable form of
// the disk contract of DESIGN.md section 3. Its model — page cache versus durable image,
// dirty bytes, what a failed fdatasync loses, the directory journals, and exactly what a
// crash keeps, drops, tears or garbles — is documented in disk.go; the faults added for
// issue 11 (EIO on every mutating op, a device that stays full until space is freed,
// misdirected writes, bit rot at rest, process crashes that keep the page cache, writes
// in flight at a crash) in disk_faults.go.
//
// The page cache is distinct from the device: a plain read returns what was written, and
// only a device read (disk.Op.Device) sees a corrupted, lost or misdirected write or
// pages a failed sync lost. The WAL's group read-back, commitDurable's read-back, plog
// recovery's tail check and the metastore's read-back read the device, and so does WAL
// recovery's scan (after a process crash the cache still shows pages a failed sync
// lost; walsim seed 20), which also syncs the WAL directory every time (cluster seed 7);
// the mutation
// narad_mut_readbackcache serves the first three from the cache and the node simulator
// catches it (invariant 1).
//
// The simulators draw every fault of disk_faults.go except bit rot (RotProb stays 0 in
// their options): Narad keeps one copy of a record (its WAL, then its partition log), so
// rot of the only copy of an acknowledged record is loss that no check of the core can
// prevent; the disk's own tests exercise it.
package sim
