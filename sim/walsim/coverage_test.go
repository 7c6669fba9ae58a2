package walsim

import (
	"os"
	"testing"

	"github.com/narad/narad/sim"
)

// Over seeds 1-100 every fault class the WAL simulator draws fires in some seed, and
// every check runs: a fault no seed injects, or a check that never runs, proves nothing.
func TestEveryFaultAndCheckRuns(t *testing.T) {
	// Not drawn here: a disk that fills up to a capacity (NoSpaceFull: the WAL alone
	// never frees space); and pending size changes at a crash (SizesKept, SizesLost):
	// the WAL syncs each truncate before it goes on; FillsFreed (walsim frees a full
	// device itself before it restarts the WAL, run.go freeSpace, so the disk's
	// FullKillsMax never comes into play).
	sim.CoverageSweep(t, os.Getenv, func(seed uint64, c *sim.Coverage) error {
		res := Run(Draw(seed))
		c.Add("stats", res.Stats)
		return res.Violation
	}, "stats.Disk.NoSpaceFull", "stats.Disk.SizesKept", "stats.Disk.SizesLost", "stats.Disk.FillsFreed")
}
