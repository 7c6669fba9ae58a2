package node

import (
	"testing"

	"pgregory.net/rapid"
)

// walkPastDead picks the first live partition walking forward from the first choice,
// never skips a live one, and keeps the first choice when every partition is dead.
func TestWalkPastDeadProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.Uint32Range(1, 64).Draw(t, "parts")
		p := rapid.Uint32Range(0, parts-1).Draw(t, "first")
		dead := rapid.SliceOfN(rapid.Bool(), int(parts), int(parts)).Draw(t, "dead")
		q := walkPastDead(p, parts, func(i uint32) bool { return dead[i] })
		if q >= parts {
			t.Fatalf("picked %d of %d partitions", q, parts)
		}
		allDead := true
		for _, d := range dead {
			allDead = allDead && d
		}
		if allDead {
			if q != p {
				t.Fatalf("all dead: picked %d, want the first choice %d", q, p)
			}
			return
		}
		if dead[q] {
			t.Fatalf("picked dead partition %d", q)
		}
		for i := p; i != q; i = (i + 1) % parts {
			if !dead[i] {
				t.Fatalf("skipped live partition %d on the way from %d to %d", i, p, q)
			}
		}
	})
}
