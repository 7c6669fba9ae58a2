package meta_test

import (
	"fmt"
	"testing"

	"github.com/narad/narad/core/meta"
)

// A fourth member joins three that own six partitions: one move to it evens them out
// (2, 2, 1, 1), the same on every call; once that move is in progress, nothing more is
// planned. (Draining members, dead ones and moves in progress: TestPlanMovesProperty.)
func TestPlanMovesEvensOutAJoinAndADrain(t *testing.T) {
	h := settled(t, meta.Config{})
	for id := uint64(1); id <= 3; id++ {
		h.run(join(id))
	}
	parts := uint32(6)
	h.run(meta.Command{Kind: meta.CreateTopic, Name: "r", Partitions: &parts})
	h.run(join(4))
	plan := h.s.PlanMoves(0)
	if len(plan) != 1 || plan[0].To != 4 {
		t.Fatalf("plan after a join: %+v (owners %s)", plan, ownersOf(h, "r"))
	}
	if got := h.s.PlanMoves(0); fmt.Sprint(got) != fmt.Sprint(plan) {
		t.Fatalf("two plans of one state: %+v and %+v", plan, got)
	}
	if got := h.s.PlanMoves(1); len(got) != 1 {
		t.Fatalf("a plan bounded to one move: %+v", got)
	}
	h.run(meta.Command{Kind: meta.StartMove, TopicID: plan[0].TopicID, Part: plan[0].Partition, Member: 4})
	if got := h.s.PlanMoves(0); len(got) != 0 {
		t.Fatalf("plan with its move in progress: %+v", got)
	}
}
