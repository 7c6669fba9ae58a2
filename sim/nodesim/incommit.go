package nodesim

import (
	"strings"

	"github.com/narad/narad/core/disk"
)

// A crash placed inside a partition commit, where recovery's row R11 (core/plog) matters:
// the process dies right after the write of a commit's frame returned and before its
// fdatasync, and that write reached the device with one bit flipped while the page cache
// kept it as written. The crash keeps the cache, so recovery's scan reads a valid frame;
// only a read of the device after the recovery sync shows the damage, and a recovery that
// trusts the frame it scanned serves a record that no durable log holds
// (narad_mut_trusttail, caught by invariant 4). The chain's crash is held, with
// Options.CrashInCommitProb, until the next partition-log write completes. Random crashes
// and random write faults almost never meet there: trusttail went uncaught over node
// seeds 1-100 before this was placed.

// holdCrashForCommit reports whether the chain's crash waits for the next commit write.
func (u *run) holdCrashForCommit() bool {
	if u.o.CrashInCommitProb == 0 || !u.up || u.healing || !u.r.Chance(u.o.CrashInCommitProb) {
		return false
	}
	u.crashInCommit = true
	return true
}

// crashInCommit strikes the held crash after op, if op is a partition log's write that
// succeeded: the write's device copy is corrupted at one byte, the process crashes with
// the page cache kept. It reports whether it did (the node is not told of op).
func (u *run) crashAfterCommitWrite(op disk.Op, res disk.Result) bool {
	if !u.crashInCommit || op.Kind != disk.KindWriteAt || res.Err != nil || len(op.Data) == 0 ||
		!strings.HasPrefix(op.Name, "parts/") {
		return false
	}
	u.crashInCommit = false
	at := op.Off + int64(u.r.Intn(len(op.Data)))
	if u.d.CorruptDirtyAt(op.Name, at) {
		u.stats.CommitCrashes++
		u.record('w', op.ID, uint64(at))
	}
	u.crashKeepingCache()
	return true
}
