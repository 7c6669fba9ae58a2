package meta

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestForgetProperty (rapid): forgetting a dead member of any state moves exactly the
// partitions it owned, each to a live member, as reassignments listed them; every other
// owner stays; the member is gone and forgotten; and the state's snapshot form keeps it.
func TestForgetProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine()
		n := rapid.IntRange(2, 6).Draw(t, "members")
		for id := uint64(1); id <= uint64(n); id++ {
			alive := rapid.Bool().Draw(t, fmt.Sprint("alive", id))
			m.members[id] = Member{ID: id, Addr: fmt.Sprint("a", id), Alive: alive}
		}
		for tid := uint64(1); tid <= uint64(rapid.IntRange(0, 4).Draw(t, "topics")); tid++ {
			parts := rapid.IntRange(1, 8).Draw(t, "partitions")
			m.add(Topic{ID: tid, Name: fmt.Sprint("t", tid), Partitions: uint32(parts),
				RetentionMs: DefaultRetentionMs, VisibilityTimeoutMs: DefaultVisibilityTimeoutMs,
				MaxInFlightPerPartition: DefaultMaxInFlightPerPartition})
			owners := make([]uint64, parts)
			for p := range owners {
				owners[p] = uint64(rapid.IntRange(1, n).Draw(t, "owner"))
			}
			m.owners[tid] = owners
		}
		id := uint64(rapid.IntRange(1, n).Draw(t, "forget"))
		before := maps.Clone(m.owners)
		err := m.checkForget(m.members[id])
		if m.members[id].Alive || len(m.liveMembers()) == 0 {
			if err == nil {
				t.Fatalf("forget of member %d allowed (alive %v, live %v)", id, m.members[id].Alive, m.liveMembers())
			}
			return
		}
		plan := m.reassignments(id)
		m.forget(id)
		moved := map[[2]uint64]uint64{}
		for _, r := range plan {
			moved[[2]uint64{r.TopicID, uint64(r.Partition)}] = r.To
		}
		for tid, owners := range before {
			for p, o := range owners {
				got := m.owners[tid][p]
				to, isMoved := moved[[2]uint64{tid, uint64(p)}]
				switch {
				case o == id && (!isMoved || got != to || !m.members[got].Alive):
					t.Fatalf("partition %d/%d of the forgotten member went to %d (plan %d)", tid, p, got, to)
				case o == id && m.epoch(tid, uint32(p)) != 1:
					t.Fatalf("partition %d/%d reassigned under epoch %d, want 1", tid, p, m.epoch(tid, uint32(p)))
				case o != id && m.epoch(tid, uint32(p)) != 0:
					t.Fatalf("partition %d/%d kept its owner but has epoch %d", tid, p, m.epoch(tid, uint32(p)))
				case o != id && (isMoved || got != o):
					t.Fatalf("partition %d/%d of member %d moved to %d", tid, p, o, got)
				}
			}
		}
		if _, member := m.members[id]; member || !m.forgotten[id] {
			t.Fatalf("member %d not forgotten", id)
		}
		back, err := decodeState(encodeState(m), m.commands+1<<20)
		if err != nil {
			t.Fatalf("snapshot round trip: %v", err)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(back.forgotten)), []uint64{id}) ||
			!maps.EqualFunc(back.epochs, m.epochs, slices.Equal) {
			t.Fatalf("snapshot round trip: forgotten %v", back.forgotten)
		}
	})
}

// A topic grown while no member was alive keeps fewer owners than partitions (the new
// ones are local): its snapshot must load.
func TestSnapshotOfATopicGrownWithNoLiveMember(t *testing.T) {
	m := newMachine()
	run := func(c Command, index uint64) {
		t.Helper()
		c.Actor = SystemActor
		n, err := c.normalize()
		if err == nil {
			_, err = m.apply(n, index, 0)
		}
		if err != nil {
			t.Fatalf("%v: %v", c.Kind, err)
		}
	}
	five, seven := uint32(5), uint32(7)
	run(Command{Kind: JoinMember, Member: 1, Addr: "a", Alive: true}, 1)
	run(Command{Kind: CreateTopic, Name: "t0", Partitions: &five}, 2)
	run(Command{Kind: SetMemberAlive, Member: 1}, 3)
	run(Command{Kind: PatchTopic, Name: "t0", Partitions: &seven}, 4)
	if _, err := decodeState(encodeState(m), 4); err != nil {
		t.Fatalf("the snapshot does not load: %v", err)
	}
}
