package sim

import (
	"slices"
	"testing"
)

func TestCoverageNamesZeroCounters(t *testing.T) {
	type inner struct{ C uint64 }
	type stats struct {
		A, B uint64
		Arr  [2]uint64
		In   inner
		Neg  int64
	}
	c := NewCoverage()
	c.Add("s", stats{A: 1, Arr: [2]uint64{0, 3}})
	c.Add("s", stats{Neg: -4})
	c.Count("checks", 0)
	got := c.Zero("s.B")
	want := []string{"s.In.C", "s.Neg", "checks"}
	if !slices.Equal(got, want) {
		t.Fatalf("Zero: %v, want %v", got, want)
	}
}

func TestAddCounters(t *testing.T) {
	a := DiskStats{SyncsFailed: 1}
	a.Ops[1] = 2
	AddCounters(&a, DiskStats{SyncsFailed: 2, PagesTorn: 5, Ops: a.Ops})
	if a.SyncsFailed != 3 || a.PagesTorn != 5 || a.Ops[1] != 4 {
		t.Fatalf("sum: %+v", a)
	}
}
