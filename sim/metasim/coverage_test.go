package metasim

import (
	"os"
	"testing"

	"github.com/narad/narad/sim"
)

// Over seeds 1-100 every fault class the metastore simulator draws fires in some seed,
// and every check runs on real work.
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
	// Not drawn here: a disk filled to a capacity, and ENOSPC (the metastore's writes
	// are small and rare).
	if zero := c.Zero("stats.Disk.NoSpaceFull", "stats.Disk.NoSpaceInjected"); len(zero) > 0 {
		t.Fatalf("never fired or never ran over seeds 1-100: %v", zero)
	}
}
