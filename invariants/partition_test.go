package invariants

import (
	"strings"
	"testing"
)

func TestPartitionHistoryCheck(t *testing.T) {
	cases := []struct {
		name  string
		build func(h *PartitionHistory)
		bad   string // "" when the history is fine; else what the error names
	}{
		{"reads and a rising watermark", func(h *PartitionHistory) {
			h.Read("p", 0, 1, 10, 20)
			h.HighWatermark("p", 1, 30, 40)
			h.ReadAbsent("p", 1, 50, 60)
			h.Read("p", 1, 2, 70, 80)
			h.Read("p", 0, 1, 90, 100) // a redelivery of the same record
			h.HighWatermark("p", 5, 110, 120)
		}, ""},
		{"a watermark read overlapping a read above it", func(h *PartitionHistory) {
			h.HighWatermark("p", 3, 10, 40)
			h.Read("p", 3, 7, 20, 30) // the commit may land after the stats were taken
		}, ""},
		{"zero watermarks are not recorded", func(h *PartitionHistory) {
			h.Read("p", 4, 1, 10, 20)
			h.HighWatermark("p", 0, 30, 40)
		}, ""},
		{"the watermark goes back", func(h *PartitionHistory) {
			h.HighWatermark("p", 5, 10, 20)
			h.HighWatermark("p", 4, 30, 40)
		}, "partition p"},
		{"served above a later watermark", func(h *PartitionHistory) {
			h.Read("p", 6, 1, 10, 20)
			h.HighWatermark("p", 6, 30, 40)
		}, "partition p"},
		{"absent below a record served before", func(h *PartitionHistory) {
			h.Read("p", 3, 1, 10, 20)
			h.ReadAbsent("p", 2, 30, 40)
		}, "partition p"},
		{"an offset changes its value", func(h *PartitionHistory) {
			h.Read("p", 3, 1, 10, 20)
			h.Read("p", 3, 2, 30, 40)
		}, "offset 3 was read as message 1, then as message 2"},
	}
	for _, c := range cases {
		h := NewPartitionHistory()
		h.Read("other", 0, 100, 0, 1) // a fine partition beside each case
		c.build(h)
		err := h.Check()
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.bad != "" && err == nil:
			t.Errorf("%s: passed, want a violation naming %q", c.name, c.bad)
		case c.bad != "" && !strings.Contains(err.Error(), c.bad):
			t.Errorf("%s: %v, want it to name %q", c.name, err, c.bad)
		}
	}
}

func TestPartitionHistoryOps(t *testing.T) {
	h := NewPartitionHistory()
	h.Read("a", 0, 1, 0, 1)
	h.ReadAbsent("b", 0, 0, 1)
	h.HighWatermark("b", 0, 0, 1) // not recorded
	if got := h.Ops(); got != 2 {
		t.Fatalf("Ops() = %d, want 2", got)
	}
}
