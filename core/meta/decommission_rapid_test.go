package meta

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestDecommissionProperty (rapid): over any sequence of member and topic commands, a
// removal succeeds only for a draining member that owns no partition and leaves a
// tombstone marked removed; a new topic's partitions never go to a draining member
// while a live one does not drain; removed ids are forgotten ones; and the snapshot form
// keeps the state, byte for byte.
func TestDecommissionProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine()
		kinds := []CommandKind{JoinMember, SetMemberAlive, DecommissionMember, CancelDecommission,
			RemoveMember, CreateTopic, DeleteTopic}
		for i := uint64(1); i <= uint64(rapid.IntRange(10, 60).Draw(t, "steps")); i++ {
			c := Command{Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Actor: SystemActor,
				Member: uint64(rapid.IntRange(1, 3).Draw(t, "member"))}
			switch c.Kind {
			case JoinMember:
				c.Addr, c.Alive = fmt.Sprint("a", c.Member), true
			case SetMemberAlive:
				c.Alive = rapid.Bool().Draw(t, "alive")
			case CreateTopic, DeleteTopic:
				c.Member, c.Name = 0, fmt.Sprint("t", rapid.IntRange(1, 3).Draw(t, "topic"))
			}
			nc, err := c.normalize()
			if err != nil {
				t.Fatalf("%v: %v", c.Kind, err)
			}
			before, owned := m.members[c.Member], m.ownedBy(c.Member)
			undrained := slices.ContainsFunc(m.liveMembers(), func(id uint64) bool {
				return !m.members[id].Draining
			})
			if _, err := m.apply(nc, i, 0); err == nil {
				m.checkStep(t, nc, i, before, owned, undrained)
			} else if c.Kind == RemoveMember && before.Draining && owned == 0 && !m.forgotten[c.Member] {
				t.Fatalf("removal of a drained member %d refused: %v", c.Member, err)
			}
			for id := range m.removed {
				if !m.forgotten[id] {
					t.Fatalf("removed member %d is not a tombstone", id)
				}
			}
		}
		enc := encodeState(m)
		back, err := decodeState(enc, m.commands+1<<20)
		if err != nil || !bytes.Equal(encodeState(back), enc) {
			t.Fatalf("snapshot round trip: %v", err)
		}
	})
}

// checkStep checks what an applied command did.
func (m *machine) checkStep(t *rapid.T, c Command, index uint64, before Member, owned int,
	undrained bool) {
	switch c.Kind {
	case RemoveMember:
		if !before.Draining || owned > 0 || !m.removed[c.Member] || m.members[c.Member].ID != 0 {
			t.Fatalf("member %d removed (draining %v, owning %d)", c.Member, before.Draining, owned)
		}
	case CreateTopic:
		for _, o := range m.owners[index] {
			if m.members[o].Draining && undrained {
				t.Fatalf("topic %d gave a partition to draining member %d", index, o)
			}
		}
	}
}
