package invariants

import (
	"testing"

	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/wal"
)

func TestRedispatchExplains(t *testing.T) {
	const ms = int64(1_000_000)
	bound := dispatch.RedispatchWindowNs
	if bound != wal.DefaultCheckpointSyncIntervalNs+dispatch.RedispatchInFlightMarginNs || bound != dispatch.RedispatchBoundNs(0, 0) {
		t.Fatalf("bound %d", bound)
	}
	crash := int64(10_000) * ms
	for _, c := range []struct {
		name       string
		first, dup int64
		crashes    []int64
		boundNs    int64
		want       bool
	}{
		{"first just inside the window", crash - bound, crash + 5*ms, []int64{crash}, 0, true},
		{"first just before the window", crash - bound - 1, crash + 5*ms, []int64{crash}, 0, false},
		{"first after the crash (copy read late)", crash + 2*ms, crash + 5*ms, []int64{crash}, 0, true},
		{"duplicate before the crash", crash - 10*ms, crash - 1, []int64{crash}, 0, false},
		{"no crash at all", crash, crash + 5*ms, nil, 0, false},
		{"crashes long after the first delivery do not explain it", crash - 5000*ms, crash + 5*ms, []int64{crash - 3000*ms, crash}, 0, false},
		{"a crash before the first delivery may (the first copy was read late)", crash - 5000*ms, crash + 5*ms, []int64{crash - 6000*ms}, 0, true},
		{"the second of two crashes explains it", crash - 100*ms, crash + 5*ms, []int64{crash - 6000*ms, crash}, 0, true},
		{"crashes in any order", crash - 100*ms, crash + 5*ms, []int64{crash, crash - 6000*ms}, 0, true},
		{"a shorter flush interval narrows it", crash - 400*ms, crash + 5*ms, []int64{crash}, dispatch.RedispatchBoundNs(100*ms, 0), false},
		{"a commit answer lost behind a cut: its timeout widens it", crash - 20000*ms, crash + 5*ms, []int64{crash}, dispatch.RedispatchBoundNs(0, 30000*ms), true},
		{"...but keeps its margin", crash - 340*ms, crash + 5*ms, []int64{crash}, dispatch.RedispatchBoundNs(100*ms, 0), true},
	} {
		if got := RedispatchExplains(c.first, c.dup, c.crashes, c.boundNs); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
