package meta

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPlanMovesProperty (rapid): on any state (moves in progress go to a member that
// does not drain: a decommission ends those to it), the plan moves only partitions of live
// members that are not moving, each from its owner to a live member that does not
// drain, each once; no member both gives and takes; after it, every live draining member
// owns nothing, none was taken below the lower share, and with no move in progress the
// placeable members' counts differ by at most one. A bounded plan is the start of the unbounded one.
func TestPlanMovesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine()
		n := rapid.IntRange(1, 6).Draw(t, "members")
		for id := uint64(1); id <= uint64(n); id++ {
			m.members[id] = Member{ID: id, Addr: fmt.Sprint("a", id), Alive: rapid.IntRange(0, 4).Draw(t, "dead") > 0,
				Draining: rapid.IntRange(0, 5).Draw(t, "draining") == 0}
		}
		for tid := uint64(1); tid <= uint64(rapid.IntRange(0, 4).Draw(t, "topics")); tid++ {
			owners := make([]uint64, rapid.IntRange(1, 9).Draw(t, "partitions"))
			for p := range owners {
				owners[p] = uint64(rapid.IntRange(1, n).Draw(t, "owner"))
				to := uint64(rapid.IntRange(1, n).Draw(t, "to"))
				if rapid.IntRange(0, 9).Draw(t, "moving") == 0 && to != owners[p] && !m.members[to].Draining {
					m.moves[moveKey{tid, uint32(p)}] = Move{TopicID: tid, Partition: uint32(p), From: owners[p], To: to}
				}
			}
			m.owners[tid] = owners
		}
		plan := m.planMoves(0)
		m.checkPlan(t, plan)
		limit := rapid.IntRange(1, 5).Draw(t, "limit")
		if got := m.planMoves(limit); len(got) > max(0, limit-len(m.moves)) ||
			!slices.Equal(got, plan[:len(got)]) {
			t.Fatalf("plan bounded to %d (%d moving): %+v, unbounded %+v", limit, len(m.moves), got, plan)
		}
	})
}

func (m *machine) checkPlan(t *rapid.T, plan []PlannedMove) {
	count := map[uint64]int{}
	for tid, owners := range m.owners { //narad:unordered (counts)
		for p, o := range owners {
			if mv, ok := m.moves[moveKey{tid, uint32(p)}]; ok {
				count[mv.To]++
			} else if m.members[o].Alive {
				count[o]++
			}
		}
	}
	var dests []uint64
	for id, mb := range m.members { //narad:unordered (a set)
		if mb.Alive && !mb.Draining {
			dests = append(dests, id)
		}
	}
	total := 0
	for id, c := range count { //narad:unordered (a sum)
		if m.members[id].Alive {
			total += c
		}
	}
	seen, gives, takes := map[moveKey]bool{}, map[uint64]bool{}, map[uint64]bool{}
	for _, pm := range plan {
		k := moveKey{pm.TopicID, pm.Partition}
		_, moving := m.moves[k]
		to := m.members[pm.To]
		if seen[k] || moving || m.owners[pm.TopicID][pm.Partition] != pm.From || !m.members[pm.From].Alive ||
			!to.Alive || to.Draining || pm.From == pm.To {
			t.Fatalf("planned %+v (moving %v, seen %v)", pm, moving, seen[k])
		}
		seen[k], gives[pm.From], takes[pm.To] = true, true, true
		count[pm.From]--
		count[pm.To]++
	}
	if len(dests) == 0 {
		if len(plan) > 0 {
			t.Fatalf("a plan with no member to take partitions: %+v", plan)
		}
		return
	}
	lo, hi := count[dests[0]], count[dests[0]]
	for _, id := range dests {
		lo, hi = min(lo, count[id]), max(hi, count[id])
		if gives[id] && takes[id] || gives[id] && count[id] < total/len(dests) {
			t.Fatalf("member %d gives and takes, or gave below its share: %+v", id, plan)
		}
	}
	for id, mb := range m.members { //narad:unordered (each checked alone)
		if mb.Alive && mb.Draining && count[id] > 0 {
			t.Fatalf("draining member %d keeps %d partitions: %+v", id, count[id], plan)
		}
	}
	if hi-lo > 1 && len(m.moves) == 0 { // (partitions moving in may overfill a member for now)
		t.Fatalf("counts from %d to %d after the plan %+v", lo, hi, plan)
	}
}
