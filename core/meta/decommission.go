package meta

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
)

// Decommissioning a member drains it, then removes it (DecommissionMember). A draining
// member takes no new partitions (placeable) and is never promoted to voter. Once it owns
// no partition and its node holds nothing undelivered (core/node decommission.go), the
// node proposes its own RemoveMember: the member leaves, its id
// is kept as a tombstone like a forgotten one's (IsForgotten: never a member again, out
// of the raft configuration, told to stop when heard) and marked removed (IsRemoved:
// nothing was given up). CancelDecommission stops a drain that has not finished.
//
// A leader whose removal is applied hands its leadership to a healthy voter
// (transferAway) before its node stops; the new leader takes it out of the configuration.
//
// A draining member's partitions move to the others: the leader's controller plans and
// starts those moves first (rebalance_control.go), and the member's removal waits for
// them (RemoveMember needs a member that owns none).
//
// Guards, checked by the leader on a current view before it proposes either command
// (removalGuard): some other live member that is not draining remains ('last'); never
// fewer than 3 voters while 3 or more members remain ('voters'); the healthy voters left
// are a quorum of the new configuration, and the healthy voters but this member a quorum
// of the current one, which still counts it until the controller's change ('quorum').

// ErrNotDraining answers CancelDecommission (and RemoveMember) for a member that is not
// draining (409).
var ErrNotDraining = errors.New("meta: the member is not draining")

// ErrRemoved is a removed member's stop: it was decommissioned (nothing was given up).
var ErrRemoved = errors.New("meta: the member was removed from the cluster")

// IsRemoved reports whether id is a member removed by a decommission (IsForgotten holds
// for it too: both are tombstones).
func (s *Store) IsRemoved(id uint64) bool { return s.sm.removed[id] }

// IsDraining reports whether id is a member being decommissioned.
func (s *Store) IsDraining(id uint64) bool { return s.sm.members[id].Draining }

// checkDecommission: a cancel or a removal needs a draining member, and a removal one
// that owns no partition.
func (m *machine) checkDecommission(c Command, mb Member) error {
	if c.Kind == DecommissionMember {
		return nil // a second decommission of a draining member changes nothing
	}
	if !mb.Draining {
		return fmt.Errorf("%w: member %d", ErrNotDraining, mb.ID)
	}
	if n := m.ownedBy(mb.ID); c.Kind == RemoveMember && n > 0 {
		return fmt.Errorf("%w: partitions: member %d owns %d partitions", ErrGuard, mb.ID, n)
	}
	return nil
}

// applyDecommission applies DecommissionMember, CancelDecommission or RemoveMember.
func (m *machine) applyDecommission(c Command) {
	m.endMoves(func(mv Move) bool { return mv.To == c.Member }) // it takes no partition
	if c.Kind == RemoveMember {
		delete(m.members, c.Member)
		delete(m.forwards, c.Member) // its forwards are refused from now on
		m.forgotten[c.Member] = true
		m.removed[c.Member] = true
		return
	}
	mb := m.members[c.Member]
	mb.Draining = c.Kind == DecommissionMember
	m.members[c.Member] = mb
}

// ownedBy counts the partitions member id owns.
func (m *machine) ownedBy(id uint64) int {
	n := 0
	for _, tid := range slices.Sorted(maps.Keys(m.owners)) {
		for _, o := range m.owners[tid] {
			if o == id {
				n++
			}
		}
	}
	return n
}

// placeable lists the members that take partitions (new topics, a forget's): the live
// ones that are not draining, ascending; when every live member drains, the live ones.
func (m *machine) placeable() []uint64 {
	live := m.liveMembers()
	if mutDrainPlace {
		return live
	}
	if p := slices.DeleteFunc(slices.Clone(live), func(id uint64) bool {
		return m.members[id].Draining
	}); len(p) > 0 {
		return p
	}
	return live
}

// decommissionGuard refuses to decommission member id: the guards of its removal
// (removalGuard). Its partitions move to the others first (rebalance_control.go).
func (s *Store) decommissionGuard(id uint64) error {
	return s.removalGuard(id)
}

// removalGuard refuses to remove member id (see the guards above). It reads the applied
// configuration: one change at a time.
func (s *Store) removalGuard(id uint64) error {
	if len(s.confState.GetVotersOutgoing()) > 0 {
		return fmt.Errorf("%w: a configuration change is in progress, try again", ErrBusy)
	}
	others := slices.DeleteFunc(s.sm.liveMembers(), func(x uint64) bool {
		return x == id || s.sm.members[x].Draining
	})
	if len(others) == 0 {
		return fmt.Errorf("%w: last: no other live member that is not draining would remain",
			ErrGuard)
	}
	if err := s.votersLeftGuard(id, "removing"); err != nil || mutNoQuorumGuard {
		return err
	}
	if err := quorumGuard(s.votersWithout(id), nil, s.healthy); err != nil {
		return err
	}
	// Until the controller's change, the configuration still counts the member, stopped.
	if !slices.Contains(s.confState.GetVoters(), id) {
		return nil
	}
	return quorumGuard(s.confState.GetVoters(), nil, func(v uint64) bool {
		return v != id && s.healthy(v)
	})
}

// transferAway: this leader is to leave (its removal is applied): it hands the
// leadership to the healthy voter, not draining, that holds the most of the log (then
// the lowest id). Raft refuses proposals while the transfer runs and gives it up after
// an election timeout; the controller asks again.
func (s *Store) transferAway(st raft.BasicStatus) {
	if st.LeadTransferee != 0 {
		return
	}
	progress := s.rn.Status().Progress
	var to, match uint64
	for _, v := range s.votersWithout(s.cfg.ID) {
		m, ok := s.sm.members[v]
		pr, known := progress[v]
		if ok && m.Alive && !m.Draining && known && (to == 0 || pr.Match > match) {
			to, match = v, pr.Match
		}
	}
	if to != 0 {
		s.rn.TransferLeader(to)
	}
}

// leaveIfRemoved is the controller's part (leader only, on a current view): a leader
// whose own removal was applied hands its leadership on; the next leader takes it out
// of the configuration (promote.go), and its node stops once a follower.
func (s *Store) leaveIfRemoved(st raft.BasicStatus) {
	if s.sm.forgotten[s.cfg.ID] {
		s.transferAway(st)
	}
}

// OwnedBy counts the partitions member id owns.
func (s *Store) OwnedBy(id uint64) int { return s.sm.ownedBy(id) }

// DecommissionPlan answers whether decommissioning member id would go on this replica:
// nil, or the error the command (or a guard, on the leader) would get.
func (s *Store) DecommissionPlan(id uint64) error {
	c, err := Command{Kind: DecommissionMember, Member: id, Actor: SystemActor}.normalize()
	if err == nil {
		_, err = s.sm.check(c)
	}
	if err == nil {
		err = s.decommissionGuard(id)
	}
	return err
}
