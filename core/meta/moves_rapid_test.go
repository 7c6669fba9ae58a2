package meta

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestMoveProperty (rapid): over any sequence of member, topic and move commands, every
// move in progress is of a partition its source owns under the move's epoch, to another
// member (both alive when it started, the destination not draining); a partition's
// epoch never goes back, and one epoch of a partition never has
// two owners (the fence a cutover relies on); a cutover gives the partition to the
// move's destination under the next epoch; and the snapshot form keeps the state.
func TestMoveProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine()
		for id := uint64(1); id <= 4; id++ {
			m.members[id] = Member{ID: id, Addr: fmt.Sprint("a", id), Alive: true}
		}
		four := uint32(4)
		for i, name := range []string{"a", "b"} {
			c, _ := Command{Kind: CreateTopic, Name: name, Partitions: &four, Actor: SystemActor}.normalize()
			if _, err := m.apply(c, uint64(i+1), 0); err != nil {
				t.Fatalf("create: %v", err)
			}
		}
		owner := map[[3]uint64]uint64{} // (topic, partition, epoch) -> the owner seen
		kinds := []CommandKind{StartMove, StartMove, StartMove, FreezeMove, FreezeMove, CutOverMove,
			CutOverMove, AbortMove, CreateTopic, DeleteTopic, SetMemberAlive, ForgetMember,
			DecommissionMember}
		for i := uint64(1); i <= uint64(rapid.IntRange(10, 80).Draw(t, "steps")); i++ {
			c := m.drawMoveStep(t, rapid.SampledFrom(kinds).Draw(t, "kind"))
			before := m.moves[moveKey{c.TopicID, c.Part}]
			var src Member
			if owners := m.owners[c.TopicID]; int(c.Part) < len(owners) {
				src = m.members[owners[c.Part]]
			}
			dst := m.members[c.Member]
			plan := m.reassignments(c.Member) // what a forget of c.Member gives away
			nc, err := c.normalize()
			if err != nil {
				t.Fatalf("%v: %v", c.Kind, err)
			}
			_, err = m.apply(nc, i+100, 0)
			if err == nil && c.Kind == StartMove && (!src.Alive || !dst.Alive || dst.Draining) {
				t.Fatalf("move started from %+v to %+v", src, dst)
			}
			if err == nil && c.Kind == CutOverMove {
				if got := m.owners[c.TopicID][c.Part]; got != before.To ||
					m.epoch(c.TopicID, c.Part) != before.Epoch+1 {
					t.Fatalf("cutover of %+v: owner %d epoch %d", before, got, m.epoch(c.TopicID, c.Part))
				}
				if ce := m.cutEpochs[c.TopicID]; int(c.Part) >= len(ce) || ce[c.Part] != before.Epoch+1 {
					t.Fatalf("cutover of %+v not recorded: %v", before, ce)
				}
			}
			if err == nil && c.Kind == ForgetMember {
				for _, r := range plan { // reassigned empty: never taken for a cutover's copy
					if (&Store{sm: m}).CutOver(r.TopicID, r.Partition) {
						t.Fatalf("partition %d/%d reassigned by a forget reads as cut over", r.TopicID, r.Partition)
					}
				}
			}
			m.checkMoves(t, owner)
		}
		enc := encodeState(m)
		back, err := decodeState(enc, 1<<30)
		if err != nil || !bytes.Equal(encodeState(back), enc) {
			t.Fatalf("snapshot round trip: %v", err)
		}
	})
}

// drawMoveStep draws a command of kind k over the machine's topics and members: a move
// command names a known topic, and a partition that moves, most of the time, and its
// move's epoch most of the time.
func (m *machine) drawMoveStep(t *rapid.T, k CommandKind) Command {
	c := Command{Kind: k, Actor: SystemActor}
	switch k {
	case CreateTopic, DeleteTopic:
		c.Name = fmt.Sprint("t", rapid.IntRange(1, 3).Draw(t, "topic"))
		return c
	case SetMemberAlive, ForgetMember, DecommissionMember:
		c.Member = uint64(rapid.IntRange(1, 4).Draw(t, "member"))
		c.Alive = k == SetMemberAlive && rapid.Bool().Draw(t, "alive")
		return c
	}
	c.TopicID = uint64(rapid.IntRange(1, 120).Draw(t, "topic id"))
	if ids := slices.Sorted(maps.Keys(m.byID)); len(ids) > 0 && rapid.IntRange(0, 9).Draw(t, "known") > 0 {
		c.TopicID = rapid.SampledFrom(ids).Draw(t, "topic")
	}
	c.Part = uint32(rapid.IntRange(0, 4).Draw(t, "partition"))
	if mvs := m.sortedMoves(); k != StartMove && len(mvs) > 0 && rapid.IntRange(0, 9).Draw(t, "moving") > 0 {
		mv := rapid.SampledFrom(mvs).Draw(t, "move")
		c.TopicID, c.Part = mv.TopicID, mv.Partition
	}
	switch k {
	case StartMove:
		c.Member = uint64(rapid.IntRange(1, 4).Draw(t, "to"))
	case FreezeMove, CutOverMove:
		c.Epoch = m.moves[moveKey{c.TopicID, c.Part}].Epoch
		if rapid.IntRange(0, 4).Draw(t, "skew") == 0 {
			c.Epoch++
		}
	}
	return c
}

// checkMoves holds the state to the rules of moves (see TestMoveProperty).
func (m *machine) checkMoves(t *rapid.T, owner map[[3]uint64]uint64) {
	for _, mv := range m.moves { //narad:unordered (each checked alone)
		if !m.validMove(mv) {
			t.Fatalf("move %+v: owners %v epoch %d", mv, m.owners[mv.TopicID], m.epoch(mv.TopicID, mv.Partition))
		}
	}
	for tid, owners := range m.owners { //narad:unordered (each checked alone)
		for p, o := range owners {
			e := m.epoch(tid, uint32(p))
			k := [3]uint64{tid, uint64(p), uint64(e)}
			if prev, ok := owner[k]; ok && prev != o {
				t.Fatalf("partition %d/%d has owners %d and %d at epoch %d", tid, p, prev, o, e)
			}
			if next := owner[[3]uint64{tid, uint64(p), uint64(e) + 1}]; next != 0 {
				t.Fatalf("partition %d/%d went back to epoch %d", tid, p, e)
			}
			owner[k] = o
		}
	}
}
