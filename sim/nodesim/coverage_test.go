package nodesim

import (
	"github.com/narad/narad/sim"
	"maps"
	"os"
	"slices"
	"testing"
)

// Over seeds 1-100 every fault class fires in some seed and every checker does real
// work (issue 11, point 5): a checker that never runs, or a fault that never fires,
// proves nothing.
func TestSeedsCoverFaultsAndCheckers(t *testing.T) {
	sim.CoverageSweep(t, os.Getenv)
	faults, checkers := map[string]uint64{}, map[string]uint64{}
	for seed := uint64(1); seed <= 100; seed++ {
		s := Run(Draw(seed)).Stats
		for k, v := range s.Faults() { //narad:unordered (sums)
			faults[k] += v
		}
		for k, v := range s.Checkers() { //narad:unordered (sums)
			checkers[k] += v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(faults)) {
		if faults[k] == 0 {
			t.Errorf("fault class %s never fired in seeds 1-100", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(checkers)) {
		if checkers[k] == 0 {
			t.Errorf("checker %s did no work in seeds 1-100", k)
		}
	}
	t.Logf("faults %v\ncheckers %v", faults, checkers)
}
