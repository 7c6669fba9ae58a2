package walsim

import "github.com/narad/narad/core/disk"

// A crash placed inside a write. The periodic crash chain strikes at random times, and a
// write is in flight for a small part of a run (its latency, against the fsyncs around
// it): over seeds 1-100 only three writes were ever in flight at a crash, so whether the
// WAL recovers when such a write reached the cache (Disk.Land) went untested. With
// Options.CrashInWriteProb a crash of the chain is held back until the WAL issues its
// next write, and strikes halfway through that write's flight: Land then decides each
// write in flight, and recovery must hold invariants 1 and 3 whatever landed.

// holdCrashForWrite reports whether the chain's crash waits for the next write.
func (u *run) holdCrashForWrite() bool {
	if u.o.CrashInWriteProb == 0 || !u.up || u.healing || !u.r.Chance(u.o.CrashInWriteProb) {
		return false
	}
	u.crashInWrite = true
	return true
}

// crashInFlight schedules the held crash inside op, issued now with latency lat, if op is
// a write.
func (u *run) crashInFlight(op disk.Op, lat int64) {
	if !u.crashInWrite || u.healing || op.Kind != disk.KindWriteAt {
		return
	}
	u.crashInWrite = false
	u.record('w', op.ID)
	u.s.At(u.s.Now()+lat/2, event{kind: evCrash, epoch: u.epoch})
}
