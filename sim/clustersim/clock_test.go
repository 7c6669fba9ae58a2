package clustersim

import (
	"testing"

	"pgregory.net/rapid"
)

// sim inverts local: the first simulated time whose reading reaches a local deadline.
func TestClockInverse(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := clock{offsetNs: rapid.Int64Range(0, 20e9).Draw(t, "offset"), ppm: rapid.Int64Range(-2000, 2000).Draw(t, "ppm")}
		local := rapid.Int64Range(c.local(0)+1, c.local(0)+1e12).Draw(t, "local")
		s := c.sim(local)
		if c.local(s) < local || (s > 0 && c.local(s-1) >= local) {
			t.Fatalf("sim(%d) = %d: local there %d, before %d", local, s, c.local(s), c.local(s-1))
		}
	})
}
