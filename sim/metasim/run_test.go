package metasim

import (
	"maps"
	"slices"
	"testing"
)

// regressionSeeds are seeds that once failed, each with what was wrong.
var regressionSeeds = map[uint64]string{
	149: "a follower crashed after installing the leader's snapshot (index 83 term 7) but before rewriting raft.log; its old log held a term-6 suffix past the snapshot, and every recovery refused it (terms go backwards at 84, row L8)",
}

func TestRegressionSeeds(t *testing.T) {
	for _, seed := range slices.Sorted(maps.Keys(regressionSeeds)) {
		if res := Run(Draw(seed)); res.Violation != nil {
			t.Errorf("seed %d (%s): %v\n%s", seed, regressionSeeds[seed], res.Violation, Draw(seed))
		}
	}
}

func TestShortSweep(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ { // make sim sweeps more, without the race detector
		res := Run(Draw(seed))
		if res.Violation != nil {
			t.Errorf("seed %d: %v\n%s", seed, res.Violation, Draw(seed))
		}
		if res.Stats.Acked == 0 || res.Stats.Leaders == 0 {
			t.Errorf("seed %d did no work: %+v", seed, res.Stats)
		}
	}
}

// The same seed gives the same trace within one process (narad-sim's determinism target
// compares two processes).
func TestSameSeedSameTrace(t *testing.T) {
	a, b := Run(Draw(4)), Run(Draw(4))
	if a.Trace != b.Trace {
		t.Fatalf("seed 4: trace %s then %s", a.Trace, b.Trace)
	}
}
