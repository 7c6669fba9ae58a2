package meta

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
)

// Forgetting a member is the explicit way to give up a node that will not return
// (ForgetMember). Only a member marked dead can be forgotten. The entry removes it from
// the members, keeps its id among the forgotten (never a member again: its heartbeats are
// not a join, a JoinMember or SetMemberAlive of it is refused with ErrForgotten), and
// gives each partition it owned to a live member, empty: the records only it held are
// lost, which is what forgetting means. The leader's controller then removes the id from
// the raft configuration (promote.go), promoting a live learner in the same change when
// the voters would fall short of VotersTarget.
//
// Guards, checked by the leader before it proposes (forgetGuard): the voters left must
// be a quorum of healthy ones, and at least 3 while 3 or more members remain (counting
// the live learners the same change can promote). A refusal is ErrGuard naming the guard.

// Errors of ForgetMember.
var (
	// ErrMemberAlive: only a member the controller marked dead can be forgotten (409).
	ErrMemberAlive = errors.New("meta: the member is alive")
	// ErrForgotten: the id was forgotten; it can never be a member again (409).
	ErrForgotten = errors.New("meta: the member was forgotten")
)

// Reassignment is one partition a forget gives to another member, under Epoch.
type Reassignment struct {
	TopicID   uint64
	Topic     string
	Partition uint32
	From, To  uint64
	Epoch     uint32
}

// EpochOffsetBits: the records of a partition's epoch e have offsets from EpochBase(e):
// a partition reassigned empty starts past every offset its earlier copy can have held
// (2^40 records per epoch), so an offset never names two records.
const EpochOffsetBits = 40

// EpochBase is the first offset of a partition's epoch e.
func EpochBase(e uint32) uint64 { return uint64(e) << EpochOffsetBits }

// PartitionEpoch is the epoch of partition p of topic incarnation topicID.
func (s *Store) PartitionEpoch(topicID uint64, p uint32) uint32 { return s.sm.epoch(topicID, p) }

func (m *machine) epoch(topicID uint64, p uint32) uint32 {
	if ep := m.epochs[topicID]; int(p) < len(ep) {
		return ep[p]
	}
	return 0
}

// checkForget: the member is dead and another live member can take its partitions.
func (m *machine) checkForget(mb Member) error {
	if mb.Alive {
		return fmt.Errorf("%w: member %d is alive: decommission it instead", ErrMemberAlive, mb.ID)
	}
	if len(m.liveMembers()) == 0 {
		return fmt.Errorf("%w: no live member to take the partitions of member %d", ErrGuard, mb.ID)
	}
	return nil
}

// forget applies ForgetMember: the member leaves, its id is kept as forgotten, and its
// partitions go to live members (reassignments).
func (m *machine) forget(id uint64) {

	m.endMoves(func(mv Move) bool { return mv.From == id || mv.To == id })
	for _, r := range m.reassignments(id) {
		m.setOwner(r.TopicID, r.Partition, r.To, r.Epoch)
	}
	delete(m.members, id)
	delete(m.forwards, id) // its forwards are refused from now on
	m.forgotten[id] = true
}

// reassignments lists the partitions member id owns and the live member each goes to:
// partition p of topic t to the live member at (t + p) modulo their number, so that a
// dry run names the same owners the entry will (it does not depend on the entry's index).
// A partition that moves goes to another live member than the move's destination when
// there is one: a destination that finds itself the owner under the next epoch when
// its move ends then knows the cutover did it (core/node move.go), never a forget that
// gives it the partition empty (cluster seed 1187: a copy without its acks served).
func (m *machine) reassignments(id uint64) []Reassignment {
	live := slices.DeleteFunc(m.placeable(), func(x uint64) bool { return x == id })
	if len(live) == 0 {
		return nil
	}
	var out []Reassignment
	for _, tid := range slices.Sorted(maps.Keys(m.owners)) {
		for p, o := range m.owners[tid] {
			if o == id {
				cands := live
				if mv, moving := m.moves[moveKey{tid, uint32(p)}]; moving && len(live) > 1 {
					cands = slices.DeleteFunc(slices.Clone(live), func(x uint64) bool { return x == mv.To })
				}
				to := cands[(tid+uint64(p))%uint64(len(cands))]
				out = append(
					out,
					Reassignment{TopicID: tid, Topic: m.byID[tid], Partition: uint32(p), From: id, To: to,
						Epoch: m.epoch(tid, uint32(p)) + 1},
				)
			}
		}
	}
	return out
}

// ForgetPlan answers what forgetting member id would do on this replica: the partitions
// it would reassign, or the error the command (or a guard, on the leader) would get.
func (s *Store) ForgetPlan(id uint64) ([]Reassignment, error) {
	c, err := Command{Kind: ForgetMember, Member: id, Actor: SystemActor}.normalize()
	if err == nil {
		_, err = s.sm.check(c)
	}
	if err == nil {
		err = s.forgetGuard(id)
	}
	if err != nil {
		return nil, err
	}
	return s.sm.reassignments(id), nil
}

// membershipGuard runs the guard of a ForgetMember, DecommissionMember or RemoveMember
// proposal (forgetGuard, decommissionGuard, removalGuard), on a leader whose view is
// current only (fresh: every entry applied, so no other forget waits in the log).
func (s *Store) membershipGuard(c Command, st raft.BasicStatus) error {
	if c.Kind != ForgetMember && c.Kind != DecommissionMember && c.Kind != RemoveMember {
		return nil
	}
	if !s.fresh(st) {
		return fmt.Errorf("%w: the leader has entries not applied yet", ErrBusy)
	}
	switch c.Kind {
	case DecommissionMember:
		return s.decommissionGuard(c.Member)
	case RemoveMember:
		return s.removalGuard(c.Member)
	}
	return s.forgetGuard(c.Member)
}

// IsForgotten reports whether id is a forgotten member's.
func (s *Store) IsForgotten(id uint64) bool { return s.sm.forgotten[id] }

// forgetGuard refuses to forget member id when the voters left would not be a quorum
// of healthy ones, or fewer than 3 (with the live learners a change can promote) while 3
// or more members remain. It reads the applied configuration: one change at a time.
func (s *Store) forgetGuard(id uint64) error {
	if id == s.cfg.ID {
		return fmt.Errorf("%w: self: member %d cannot forget itself", ErrGuard, id)
	}
	if len(s.confState.GetVotersOutgoing()) > 0 {
		return fmt.Errorf("%w: a configuration change is in progress, try again", ErrBusy)
	}
	if err := s.votersLeftGuard(id, "forgetting"); err != nil {
		return err
	}
	return quorumGuard(s.votersWithout(id), nil, s.healthy)
}

// votersLeftGuard refuses a change that takes member id out of the voters when fewer
// than 3 would remain (with the live learners, not draining, that a change can promote)
// while 3 or more members remain, or none at all.
func (s *Store) votersLeftGuard(id uint64, verb string) error {
	left := s.votersWithout(id)
	members := len(s.sm.members) - 1
	promotable := 0
	for _, l := range s.Learners() {
		if mb, ok := s.sm.members[l]; ok && mb.Alive && !mb.Draining && l != id {
			promotable++
		}
	}
	if members >= 3 && len(left)+promotable < 3 && !mutNoVotersGuard {
		return fmt.Errorf("%w: voters: %s member %d leaves %d voters and %d live learners "+
			"while %d members remain (at least 3 voters)", ErrGuard, verb, id, len(left), promotable,
			members)
	}
	if len(left) == 0 {
		return fmt.Errorf("%w: quorum: member %d is the last voter", ErrGuard, id)
	}
	return nil
}

// healthy: a member alive now, or this replica.
func (s *Store) healthy(id uint64) bool {
	m, ok := s.sm.members[id]
	return ok && m.Alive || id == s.cfg.ID
}
