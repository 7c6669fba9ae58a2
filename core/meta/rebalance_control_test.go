package meta_test

import (
	"testing"

	"github.com/narad/narad/core/meta"
)

// The controller's move duty: a new member's join starts moves to it, at most
// MovesInFlightMax at once; a draining member's partitions are moved away; a move whose
// destination is marked dead is aborted. Without Config.Rebalance nothing moves.
func TestControllerStartsAndAbortsMoves(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := settled(t, meta.Config{Rebalance: on})
		h.run(join(1))
		h.run(join(2))
		parts := uint32(6)
		h.run(meta.Command{Kind: meta.CreateTopic, Name: "a", Partitions: &parts})
		h.run(join(3))
		for range 5 {
			h.tick()
			h.settle()
		}
		mvs := h.s.Moves()
		if !on {
			if len(mvs) != 0 {
				t.Fatalf("moves without Rebalance: %+v", mvs)
			}
			continue
		}
		if len(mvs) != meta.MovesInFlightMax {
			t.Fatalf("moves after a join: %+v", mvs)
		}
		for _, mv := range mvs {
			if mv.To != 3 || mv.State != meta.MoveCopying {
				t.Fatalf("a move not to the new member: %+v", mv)
			}
		}
		h.run(meta.Command{Kind: meta.SetMemberAlive, Member: 3})
		for range 5 {
			h.tick()
			h.settle()
		}
		if mvs := h.s.Moves(); len(mvs) != 0 {
			t.Fatalf("moves to a dead member still run: %+v", mvs)
		}
		if d := h.run(meta.Command{Kind: meta.DecommissionMember, Member: 2}); d.Err != nil {
			t.Fatalf("decommission: %v", d.Err)
		}
		for range 5 {
			h.tick()
			h.settle()
		}
		mvs = h.s.Moves()
		if len(mvs) != meta.MovesInFlightMax || mvs[0].From != 2 || mvs[0].To != 1 {
			t.Fatalf("moves draining member 2: %+v", mvs)
		}
	}
}
