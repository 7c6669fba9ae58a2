package clustersim

import "testing"

func TestShortSweep(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ { // make sim sweeps more, without the race detector
		res := Run(Draw(seed))
		if res.Violation != nil {
			t.Errorf("seed %d: %v\n%s", seed, res.Violation, Draw(seed))
		}
		if res.Stats.Acked == 0 || res.Stats.Delivered == 0 {
			t.Errorf("seed %d did no work: %+v", seed, res.Stats)
		}
	}
}

func TestSameSeedSameTrace(t *testing.T) {
	a, b := Run(Draw(2)), Run(Draw(2))
	if a.Trace != b.Trace {
		t.Fatalf("seed 2: trace %s then %s", a.Trace, b.Trace)
	}
}
