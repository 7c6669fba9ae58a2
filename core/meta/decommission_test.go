package meta_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/narad/narad/core/meta"
)

func decommission(id uint64) meta.Command {
	return meta.Command{Kind: meta.DecommissionMember, Member: id}
}

func remove(id uint64) meta.Command { return meta.Command{Kind: meta.RemoveMember, Member: id} }

func cancelDecommission(id uint64) meta.Command {
	return meta.Command{Kind: meta.CancelDecommission, Member: id}
}

// A member that owns no partition is decommissioned: it drains (no new partitions), its
// removal (which its node proposes) is applied, and its id is a tombstone marked removed,
// through a restart. A removal of a member not draining is refused.
// A member that owns partitions drains too, but its removal is refused until it owns
// none (the controller moves them away: rebalance_control.go).
func TestDecommissionDrainsThenRemoves(t *testing.T) {
	h := settled(t, meta.Config{SnapshotEveryEntries: 4})
	h.run(join(1))
	h.run(join(2))
	parts := uint32(4)
	h.run(meta.Command{Kind: meta.CreateTopic, Name: "a", Partitions: &parts})
	h.run(join(3))
	if d := h.run(decommission(2)); d.Err != nil || !h.s.IsDraining(2) {
		t.Fatalf("decommission of a member that owns partitions: %v", d.Err)
	}
	if d := h.run(remove(2)); !errors.Is(d.Err, meta.ErrGuard) || !strings.Contains(d.Err.Error(), "partitions") {
		t.Fatalf("removal of a member that owns partitions: %v", d.Err)
	}
	if d := h.run(cancelDecommission(2)); d.Err != nil || h.s.IsDraining(2) {
		t.Fatalf("cancel: %v", d.Err)
	}
	if d := h.run(cancelDecommission(3)); !errors.Is(d.Err, meta.ErrNotDraining) {
		t.Fatalf("cancel of a member not draining: %v", d.Err)
	}
	if d := h.run(decommission(9)); !errors.Is(d.Err, meta.ErrNoMember) {
		t.Fatalf("decommission of an unknown member: %v", d.Err)
	}
	if d := h.run(remove(3)); !errors.Is(d.Err, meta.ErrNotDraining) {
		t.Fatalf("removal of a member not draining: %v", d.Err)
	}
	if d := h.run(decommission(3)); d.Err != nil || !h.s.IsDraining(3) {
		t.Fatalf("decommission: %v", d.Err)
	}
	if d := h.run(remove(3)); d.Err != nil { // its node proposes it once drained
		t.Fatalf("removal: %v", d.Err)
	}
	check := func(when string) {
		if h.s.IsMember(3) || !h.s.IsForgotten(3) || !h.s.IsRemoved(3) || h.s.IsRemoved(2) {
			t.Fatalf("%s: member %v forgotten %v removed %v", when, h.s.IsMember(3), h.s.IsForgotten(3),
				h.s.IsRemoved(3))
		}
	}
	check("after the decommission")
	if d := h.run(join(3)); !errors.Is(d.Err, meta.ErrForgotten) {
		t.Fatalf("join of a removed member: %v", d.Err)
	}
	h.run(create("b"))
	h.restart()
	h.settle()
	check("after a restart")
}

// A draining member takes no new partitions; a cancel ends the drain.
func TestDrainingMemberTakesNoPartitionsAndCancels(t *testing.T) {
	h := settled(t, meta.Config{})
	for id := uint64(1); id <= 3; id++ {
		h.run(join(id))
	}
	h.propose(decommission(3))
	parts := uint32(6)
	h.propose(meta.Command{Kind: meta.CreateTopic, Name: "a", Partitions: &parts})
	h.propose(cancelDecommission(3))
	h.settle()
	if !h.s.IsMember(3) || h.s.IsDraining(3) || h.s.IsRemoved(3) {
		t.Fatalf("member 3 after a cancel: member %v draining %v removed %v", h.s.IsMember(3),
			h.s.IsDraining(3), h.s.IsRemoved(3))
	}
	if owners := ownersOf(h, "a"); strings.Contains(owners, "3") {
		t.Fatalf("a topic created while member 3 drained: owners %s", owners)
	}
}

// The guards of a decommission: another live member that does not drain must remain
// ('last'), and 3 voters while 3 or more members remain ('voters').
func TestDecommissionGuards(t *testing.T) {
	h := settled(t, meta.Config{})
	h.run(join(1))
	h.run(join(2))
	h.run(alive(2, false))
	d := h.run(decommission(1))
	if !errors.Is(d.Err, meta.ErrGuard) || !strings.Contains(d.Err.Error(), "last") {
		t.Fatalf("decommission of the last live member: %v", d.Err)
	}
	for id := uint64(3); id <= 4; id++ {
		h.run(join(id))
	}
	// One voter (this store) and four members: removing 4 leaves 3 members and 1 voter.
	d = h.run(decommission(4))
	if !errors.Is(d.Err, meta.ErrGuard) || !strings.Contains(d.Err.Error(), "voters") {
		t.Fatalf("decommission that leaves one voter of three members: %v", d.Err)
	}
}
