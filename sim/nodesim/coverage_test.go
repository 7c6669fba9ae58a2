package nodesim

import (
	"os"
	"testing"

	"github.com/narad/narad/sim"
)

// Over seeds 1-100 every fault class fires in some seed and every checker does real
// work (issue 11, point 5).
func TestSeedsCoverFaultsAndCheckers(t *testing.T) {
	sim.CoverageSweep(t, os.Getenv, func(seed uint64, c *sim.Coverage) error {
		res := Run(Draw(seed))
		c.AddMap("fault", res.Stats.Faults())
		c.AddMap("checker", res.Stats.Checkers())
		return res.Violation
	})
}
