package meta

import (
	"cmp"
	"maps"
	"slices"
)

// Rebalance planning: which partitions to move so that the members that take partitions
// own as even a share as can be, with the fewest moves. PlanMoves is a pure function of
// the state; the leader's controller runs it when a member joins or drains, after a
// leader change and on request, and starts at most MovesInFlightMax of its moves at once
// (rebalance_control.go).
//
// The rule:
//   - the members that take partitions are the live ones that do not drain (placeable);
//     a dead member's partitions stay where they are (a copy needs its source: a dead
//     member comes back, or is forgotten);
//   - every partition of a live draining member moves;
//   - then the placeable members are evened out: with T partitions over k of them, each
//     ends with T/k or T/k+1, the extra ones left with the members that hold most now,
//     which is the fewest moves (every partition above its member's share moves once,
//     and no other);
//   - a partition that moves already counts at its destination and is not planned again;
//   - a member gives up its first partitions, by topic id then index; each goes to the
//     member furthest under its share, then the one that holds least of that topic
//     (spreading a topic over the members), then the lowest id.

// PlannedMove is one move of a plan: partition Partition of topic TopicID from From to To.
type PlannedMove struct {
	TopicID   uint64
	Partition uint32
	From, To  uint64
}

// PlanMoves plans the moves that even out the partitions on this replica's state (see
// above), at most limit of them beyond the moves in progress (limit <= 0: no bound).
func (s *Store) PlanMoves(limit int) []PlannedMove { return s.sm.planMoves(limit) }

// placed is one partition and where it is (or goes, when it moves).
type placed struct {
	topic uint64
	part  uint32
	owner uint64
}

func (m *machine) planMoves(limit int) []PlannedMove {
	dests := slices.DeleteFunc(m.liveMembers(), func(id uint64) bool { return m.members[id].Draining })
	if len(dests) == 0 {
		return nil
	}
	count := map[uint64]int{}
	var movable []placed
	for _, tid := range slices.Sorted(maps.Keys(m.owners)) {
		for p, o := range m.owners[tid] {
			if mv, moving := m.moves[moveKey{tid, uint32(p)}]; moving {
				count[mv.To]++
				continue
			}
			if mb := m.members[o]; mb.Alive {
				movable = append(movable, placed{tid, uint32(p), o})
				count[o]++
			}
		}
	}
	share := shares(dests, count, func(id uint64) bool { return m.members[id].Alive })
	var plan []PlannedMove
	for _, pl := range movable {
		if room := limit - len(m.moves) - len(plan); limit > 0 && room <= 0 {
			break
		}
		if count[pl.owner] <= share[pl.owner] {
			continue // a placeable member at or under its share keeps this one
		}
		to := m.pickDestination(dests, count, share, pl.topic)
		plan = append(plan, PlannedMove{TopicID: pl.topic, Partition: pl.part, From: pl.owner, To: to})
		count[pl.owner]--
		count[to]++
	}
	return plan
}

// shares gives each placeable member its share of the partitions the live members hold
// (a move to a dead member counts there, out of the share): T/k each, plus one for the
// T mod k that hold most now (then the lowest ids). A member not placeable (draining)
// gets a share of none (absent: 0).
func shares(dests []uint64, count map[uint64]int, live func(uint64) bool) map[uint64]int {
	total := 0
	for id, n := range count { //narad:unordered (a sum)
		if live(id) {
			total += n
		}
	}
	byLoad := slices.Clone(dests)
	slices.SortStableFunc(byLoad, func(a, b uint64) int { return cmp.Compare(count[b], count[a]) })
	share := map[uint64]int{}
	for i, id := range byLoad {
		share[id] = total / len(dests)
		if i < total%len(dests) {
			share[id]++
		}
	}
	return share
}

// pickDestination picks the placeable member furthest under its share (then the one that
// holds least of topic, then the lowest id).
func (m *machine) pickDestination(
	dests []uint64,
	count, share map[uint64]int,
	topic uint64,
) uint64 {
	held := func(id uint64) int {
		n := 0
		for _, o := range m.owners[topic] {
			if o == id {
				n++
			}
		}
		return n
	}
	return slices.MinFunc(dests, func(a, b uint64) int {
		return cmp.Or(cmp.Compare(count[a]-share[a], count[b]-share[b]), cmp.Compare(held(a), held(b)),
			cmp.Compare(a, b))
	})
}
