package clustersim

import (
	"maps"
	"slices"
	"testing"
)

// Seeds that once failed, kept as regression tests (with what they found).
var regressionSeeds = map[uint64]string{
	47:  "a client whose think time was 0 looped at one instant (the liveness guard reports it)",
	68:  "the commit tracker counted timeouts in simulated time, not on the sender's clock",
	7:   "after a process crash WAL recovery trusted a listed segment whose create was never made durable (SyncDir EIO); a machine crash then unlinked acknowledged records",
	15:  "the 31 s stall: commits sent before a connection was up (after the heal restarted the links) failed at the sender unreported, and held their partitions for the 30 s commit timeout (invariant 11; narad_mut_sendfailsilent brings it back)",
	173: "a discard-confirming barrier lost before the heal held a partition's records for the metastore's 10 s request timeout (invariant 11's bound counts it)",
	377: "a read fault flipped back the very bit a write fault had flipped: a damaged commit read back intact (the disk model now bounds read faults)",
}

func TestRegressionSeeds(t *testing.T) {
	for _, seed := range slices.Sorted(maps.Keys(regressionSeeds)) {
		if res := Run(Draw(seed)); res.Violation != nil {
			t.Errorf("seed %d (%s): %v\n%s", seed, regressionSeeds[seed], res.Violation, Draw(seed))
		}
	}
}

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
