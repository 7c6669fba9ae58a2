package meta_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/narad/narad/core/meta"
)

func forget(id uint64) meta.Command { return meta.Command{Kind: meta.ForgetMember, Member: id} }

// Forgetting a dead member gives its partitions to the live members (as the dry run said),
// removes it, and it can never be a member again; a live or unknown member is refused.
// The state, forgotten ids included, survives a restart (snapshot and log).
func TestForgetReassignsPartitionsAndTombstones(t *testing.T) {
	h := settled(t, meta.Config{SnapshotEveryEntries: 4})
	for id := uint64(1); id <= 3; id++ {
		if d := h.run(join(id)); d.Err != nil {
			t.Fatalf("join %d: %v", id, d.Err)
		}
	}
	parts := uint32(6)
	h.run(meta.Command{Kind: meta.CreateTopic, Name: "a", Partitions: &parts})
	if d := h.run(forget(3)); !errors.Is(d.Err, meta.ErrMemberAlive) {
		t.Fatalf("forget a live member: %v", d.Err)
	}
	if d := h.run(forget(9)); !errors.Is(d.Err, meta.ErrNoMember) {
		t.Fatalf("forget an unknown member: %v", d.Err)
	}
	h.run(alive(3, false))
	plan, err := h.s.ForgetPlan(3)
	if err != nil || len(plan) != 2 {
		t.Fatalf("dry run: %v %+v (owners %s)", err, plan, ownersOf(h, "a"))
	}
	if d := h.run(forget(3)); d.Err != nil {
		t.Fatalf("forget a dead member: %v", d.Err)
	}
	check := func(when string) {
		owners := h.s.Owners(mustTopic(t, h, "a").ID)
		for _, r := range plan {
			if owners[r.Partition] != r.To || r.To == 3 {
				t.Fatalf("%s: partition %d owned by %d, the dry run said %d", when, r.Partition, owners[r.Partition], r.To)
			}
		}
		if strings.Contains(ownersOf(h, "a"), "3") || h.s.IsMember(3) || !h.s.IsForgotten(3) {
			t.Fatalf("%s: member 3 still owns or belongs: %s", when, ownersOf(h, "a"))
		}
	}
	check("after the forget")
	for _, c := range []meta.Command{join(3), alive(3, true), forget(3)} {
		if d := h.run(c); !errors.Is(d.Err, meta.ErrForgotten) {
			t.Fatalf("%v of a forgotten member: %v", c.Kind, d.Err)
		}
	}
	h.run(create("b")) // past the snapshot interval
	h.restart()
	h.settle()
	check("after a restart")
}

// The guard: never fewer than 3 voters while 3 or more members (dead ones too) remain;
// the refusal names its guard. (The quorum guard: promote_test.go, and the cluster tests.)
func TestForgetGuards(t *testing.T) {
	h := settled(t, meta.Config{})
	for id := uint64(1); id <= 4; id++ {
		h.run(join(id))
	}
	h.run(alive(4, false))
	// One voter (this store) and four members: forgetting 4 leaves 3 members and 1 voter,
	// no learner to promote.
	_, err := h.s.ForgetPlan(4)
	if !errors.Is(err, meta.ErrGuard) || !strings.Contains(err.Error(), "voters") {
		t.Fatalf("dry run: %v", err)
	}
	if d := h.run(forget(4)); !errors.Is(d.Err, meta.ErrGuard) || !h.s.IsMember(4) {
		t.Fatalf("forget: %v (member %v)", d.Err, h.s.IsMember(4))
	}
	h.run(alive(3, false))
	if d := h.run(forget(3)); !errors.Is(d.Err, meta.ErrGuard) {
		t.Fatalf("forget 3 of 4 members, dead ones counted: %v", d.Err)
	}
}
