package metasim

import "testing"

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
