package invariants

import (
	"strings"
	"testing"
)

// A message consumable within the bound passes; one that becomes consumable after it is
// reported with its lateness; one that never does is reported too.
func TestLatenessReportsLateAndNeverConsumable(t *testing.T) {
	consumable := map[uint64]bool{}
	look := func() ([]uint64, func(uint64) bool) {
		return []uint64{1, 2, 3}, func(id uint64) bool { return consumable[id] }
	}
	l := Lateness{BoundNs: 1000}
	consumable[1] = true
	l.Watch(500, 0, look) // within the bound: no look
	l.Watch(1001, 0, look)
	consumable[2] = true
	l.Watch(1001+LateLookNs, 0, look)
	err := l.Final(1002+LateLookNs, 0, look)
	if err == nil || !strings.HasPrefix(err.Error(), "invariant 11: 2 messages") ||
		!strings.Contains(err.Error(), "message 2 at") || !strings.Contains(err.Error(), "1 never consumable, first 3") {
		t.Fatalf("got %v", err)
	}
	ok := Lateness{BoundNs: 1000}
	consumable[3] = true
	ok.Watch(2000, 0, look)
	if err := ok.Final(3000, 0, look); err != nil {
		t.Fatalf("every message consumable at the bound: %v", err)
	}
}
