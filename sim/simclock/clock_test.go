package simclock

import (
	"testing"

	"pgregory.net/rapid"
)

// Sim inverts Local: the first simulated time that reads at least a local time.
func TestSimInvertsLocal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Clock{OffsetNs: rapid.Int64Range(0, 20e9).Draw(t, "offset"), PPM: rapid.Int64Range(-2000, 2000).Draw(t, "ppm"),
			StepNs: rapid.Int64Range(-5e9, 5e9).Draw(t, "step")}
		c.StepNs = max(c.StepNs, -c.OffsetNs)
		local := rapid.Int64Range(0, 1e12).Draw(t, "local")
		s := c.Sim(local)
		if local > c.Local(0) && (c.Local(s) < local || (s > 0 && c.Local(s-1) >= local)) {
			t.Fatalf("Sim(%d) = %d: Local there %d, before %d", local, s, c.Local(s), c.Local(s-1))
		}
	})
}

func TestDrawIsPerMachineAndZeroWithoutSkew(t *testing.T) {
	if (Draw(7, 0, 0, 0) != Clock{}) {
		t.Fatal("no skew and no drift must give the simulated time")
	}
	a, b := Draw(7, 0, 1e9, 100), Draw(7, 1, 1e9, 100)
	if a == b || a != Draw(7, 0, 1e9, 100) {
		t.Fatalf("machines 0 and 1: %+v %+v", a, b)
	}
}
