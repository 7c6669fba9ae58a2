package lease

import (
	"testing"

	"pgregory.net/rapid"
)

// TestAckSetAgainstMap checks the bitmap set against a plain map: adds anywhere in the
// window, floor raises, and the floor always the lowest offset not acked. (Internal: the
// set is unexported.)
func TestAckSetAgainstMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		start := rapid.Uint64Range(0, 1000).Draw(rt, "start")
		s := newAckSet(start)
		floor := start
		set := map[uint64]bool{}
		check := func() {
			for set[floor] {
				delete(set, floor)
				floor++
			}
			if s.floor != floor || s.count != len(set) {
				rt.Fatalf("floor %d count %d, want %d %d", s.floor, s.count, floor, len(set))
			}
			for o := floor; o < floor+300; o++ {
				if s.has(o) != set[o] {
					rt.Fatalf("has(%d) = %v", o, s.has(o))
				}
			}
			hi, ok := s.highest()
			var want uint64
			for o := range set { //narad:unordered (max)
				want = max(want, o)
			}
			if ok != (len(set) > 0) || ok && hi != want {
				rt.Fatalf("highest %d %v, want %d", hi, ok, want)
			}
			var prev uint64
			n := 0
			s.each(func(o uint64) {
				if !set[o] || n > 0 && o <= prev {
					rt.Fatalf("each yields %d", o)
				}
				prev = o
				n++
			})
			if n != len(set) {
				rt.Fatalf("each yields %d, want %d", n, len(set))
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"add": func(rt *rapid.T) {
				o := floor + rapid.Uint64Range(0, 260).Draw(rt, "ahead")
				if s.add(o) == set[o] {
					rt.Fatalf("add(%d) reports wrongly", o)
				}
				set[o] = true
				check()
			},
			"raise": func(rt *rapid.T) {
				f := floor + rapid.Uint64Range(0, 200).Draw(rt, "by")
				s.raiseFloor(f)
				for o := range set { //narad:unordered (deletes)
					if o < f {
						delete(set, o)
					}
				}
				floor = max(floor, f)
				check()
			},
		})
	})
}
