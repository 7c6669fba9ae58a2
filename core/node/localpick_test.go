package node

import (
	"testing"

	"pgregory.net/rapid"
)

// aheadOwned finds the first partition self owns from the cursor on, skipping none, and
// answers false only when self owns none; advancing the cursor past each pick, as
// pickPartition does, visits every partition self owns once per as many picks.
func TestAheadOwnedProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.Uint32Range(1, 64).Draw(t, "parts")
		owners := rapid.SliceOfN(rapid.Uint64Range(1, 4), 0, int(parts)).Draw(t, "owners")
		const self = 1
		mine := func(i uint32) bool { return int(i) >= len(owners) || owners[i] == self }
		var owned []uint32
		for i := range parts {
			if mine(i) {
				owned = append(owned, i)
			}
		}
		cursor := rapid.Uint32Range(0, 1<<31).Draw(t, "cursor") // far from the wrap at 2^32
		seen := map[uint32]bool{}
		for range len(owned) + 1 {
			from := cursor % parts
			skip, ok := aheadOwned(owners, self, parts, from)
			if !ok {
				if len(owned) > 0 {
					t.Fatalf("owns %v, found none from %d", owned, from)
				}
				return
			}
			q := (from + skip) % parts
			if !mine(q) {
				t.Fatalf("picked partition %d, owned by %d", q, owners[q])
			}
			for i := from; i != q; i = (i + 1) % parts {
				if mine(i) {
					t.Fatalf("skipped owned partition %d on the way from %d to %d", i, from, q)
				}
			}
			seen[q] = true
			cursor += skip + 1
		}
		if len(seen) != len(owned) {
			t.Fatalf("%d picks visited %v of the owned %v", len(owned)+1, seen, owned)
		}
	})
}
