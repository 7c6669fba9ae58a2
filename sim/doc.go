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
// crash keeps, drops, tears or garbles — is documented in disk.go.
package sim
