package walsim

import (
	"os"
	"testing"

	"github.com/narad/narad/sim"
)

// Over seeds 1-100 every fault class the WAL simulator draws fires in some seed, and
// every check runs: a fault no seed injects, or a check that never runs, proves nothing.
func TestEveryFaultAndCheckRuns(t *testing.T) {
	sim.CoverageSweep(t, os.Getenv)
	c := sim.NewCoverage()
	for seed := uint64(1); seed <= 100; seed++ {
		res := Run(Draw(seed))
		if res.Violation != nil {
			t.Errorf("seed %d: %v", seed, res.Violation)
		}
		c.Add("stats", res.Stats)
	}
	// Not drawn here: a disk that fills up to a capacity (NoSpaceFull: the WAL alone
	// never frees space); and pending size changes at a crash (SizesKept, SizesLost):
	// the WAL syncs each truncate before it goes on; FillsFreed (walsim frees a full device itself before it restarts the
	// WAL, run.go freeSpace, so the disk's FullKillsMax never comes into play).
	if zero := c.Zero("stats.Disk.NoSpaceFull", "stats.Disk.SizesKept", "stats.Disk.SizesLost",
		"stats.Disk.FillsFreed"); len(zero) > 0 {
		t.Fatalf("never fired or never ran over seeds 1-100: %v", zero)
	}
}
