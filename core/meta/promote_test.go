package meta

import (
	"errors"
	"strings"
	"testing"
)

func TestVotersTarget(t *testing.T) {
	for members, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 3, 4: 3, 5: 5, 9: 5} {
		if got := VotersTarget(members); got != want {
			t.Errorf("VotersTarget(%d) = %d, want %d", members, got, want)
		}
	}
}

// The quorum guard refuses a configuration whose healthy voters are no quorum, and names
// itself.
func TestQuorumGuard(t *testing.T) {
	up := map[uint64]bool{1: true, 3: true, 4: true}
	healthy := func(id uint64) bool { return up[id] }
	if err := quorumGuard([]uint64{1}, []uint64{3, 4}, healthy); err != nil {
		t.Fatalf("1 + {3, 4}, all healthy: %v", err)
	}
	if err := quorumGuard([]uint64{1, 2}, []uint64{3}, healthy); err != nil {
		t.Fatalf("{1, 2} + 3 with 2 down (2 of 3 healthy): %v", err)
	}
	err := quorumGuard([]uint64{1, 2, 5}, []uint64{3}, healthy)
	if !errors.Is(err, ErrGuard) || !strings.Contains(err.Error(), "quorum") {
		t.Fatalf("{1, 2, 5} + 3 with 2 and 5 down (2 of 4 healthy): %v", err)
	}
}
