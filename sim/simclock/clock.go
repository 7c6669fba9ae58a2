// Package simclock is a simulated machine's clock: off the simulated time by an offset,
// running fast or slow by a rate, and stepped forward or back (DESIGN.md section 4:
// clocks skew, drift and step). A simulated process sees only its own clock: every time
// given to it and every deadline it asks for are local; checks use simulated time.
package simclock

import "github.com/narad/narad/core/rng"

// Clock is one machine's: local = t + OffsetNs + StepNs + t*PPM/1e6.
type Clock struct {
	OffsetNs int64
	PPM      int64
	StepNs   int64 // the sum of the steps so far
}

// Draw gives machine i of a run with seed its clock: an offset over [0, 2×skewNs] (a
// clock never reads below zero: cores take 0 for "unset") and a rate over [-driftPPM,
// driftPPM], derived from the seed and the machine, not from the run's stream (so that
// drawing clocks changes no other draw).
func Draw(seed uint64, i int, skewNs, driftPPM int64) Clock {
	if skewNs == 0 && driftPPM == 0 {
		return Clock{}
	}
	r := rng.New(seed ^ uint64(i+1)*0x9e3779b97f4a7c15)
	return Clock{OffsetNs: int64(r.Range(0, int(2*skewNs))), PPM: int64(r.Range(0, int(2*driftPPM))) - driftPPM}
}

// Local is the machine's reading at simulated time t.
func (c Clock) Local(t int64) int64 { return t + c.OffsetNs + c.StepNs + t*c.PPM/1_000_000 }

// Sim is the first simulated time at which the machine reads at least local.
func (c Clock) Sim(local int64) int64 {
	if local <= c.Local(0) {
		return 0
	}
	t := (local - c.OffsetNs - c.StepNs) / (1_000_000 + c.PPM) * 1_000_000
	for c.Local(t) < local {
		t += max(1, (local-c.Local(t))/2)
	}
	for t > 0 && c.Local(t-1) >= local {
		t--
	}
	return t
}
