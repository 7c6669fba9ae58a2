package meta

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Learners become voters: a cluster grown from one node (or whose members joined after
// the initial voters) gets the voters it needs to survive failures. The leader promotes
// live learners that hold the log up to VotersTarget voters, all of them in one
// configuration change (raft's joint consensus when more than one, left automatically),
// so a cluster of one grows to three voters without a fragile step at two.

// PromoteLagMax: a learner is promoted only when its log is within this many entries of
// the leader's commit index (else the new configuration would wait for it to catch up
// before committing anything).
const PromoteLagMax = 64

// VotersTarget is the number of voters a cluster of members members keeps: 5 from five
// members on, 3 from three, else every member.
func VotersTarget(members int) int {
	switch {
	case members >= 5:
		return 5
	case members >= 3:
		return 3
	}
	return members
}

// ErrGuard answers a configuration change a guard refuses; the message names the guard.
var ErrGuard = errors.New("meta: refused by a membership guard")

// promote shapes the raft configuration to the members, in one change: forgotten ids
// leave it (forget.go), live learners caught up with the log are made voters, as many as
// the configuration lacks (VotersTarget), and voters past the target are made learners
// (four members after a forget of one of five keep three voters). One change is in
// flight at a time, tried again after RequestTimeoutTicks.
func (s *Store) promote(st raft.BasicStatus) {
	if len(s.confState.GetVotersOutgoing()) > 0 || s.promoteUntil > s.ticks {
		return
	}
	remove := s.forgottenInConf()
	voters := s.votersWithout(remove...)
	target := VotersTarget(len(s.sm.members))
	add := s.promotable(st, target-len(voters))
	demote := s.demotable(voters, len(voters)-target)
	if len(remove)+len(add)+len(demote) == 0 ||
		s.votersGuard(slices.Concat(remove, demote), add) != nil {
		return
	}
	cc := &raftpb.ConfChangeV2{}
	for _, id := range remove {
		cc.Changes = append(cc.Changes, &raftpb.ConfChangeSingle{
			Type: raftpb.ConfChangeRemoveNode.Enum(), NodeId: new(id)})
	}
	for _, id := range demote { // a voter made a learner: it keeps the log, not its vote
		cc.Changes = append(cc.Changes, &raftpb.ConfChangeSingle{
			Type: raftpb.ConfChangeAddLearnerNode.Enum(), NodeId: new(id)})
	}
	for _, id := range add {
		cc.Changes = append(cc.Changes, &raftpb.ConfChangeSingle{
			Type: raftpb.ConfChangeAddNode.Enum(), NodeId: new(id)})
	}
	if s.rn.ProposeConfChange(cc) == nil {
		s.promoteUntil = s.ticks + RequestTimeoutTicks
	}
}

// promotable lists up to want live learners whose log is within PromoteLagMax entries of
// the commit index, by id.
func (s *Store) promotable(st raft.BasicStatus, want int) []uint64 {
	if mutNoPromote || want <= 0 {
		return nil
	}
	progress := s.rn.Status().Progress
	var add []uint64
	for _, id := range s.Learners() {
		m, member := s.sm.members[id]
		pr, known := progress[id]
		caughtUp := known && pr.Match+PromoteLagMax >= st.GetCommit()
		if member && m.Alive && !m.Draining && caughtUp && len(add) < want {
			add = append(add, id)
		}
	}
	return add
}

// demotable picks up to n of voters to make learners (the voters past VotersTarget, when
// a forget left an even number): dead members first, then draining ones, then the highest
// ids; never this leader, and none while some voter is not a member yet (a cluster forming).
func (s *Store) demotable(voters []uint64, n int) []uint64 {
	formed := !slices.ContainsFunc(voters, func(id uint64) bool { return !s.IsMember(id) })
	// !formed: initial voters still joining the members: not past any target.
	if n <= 0 || !formed || mutNoDemote {
		return nil
	}
	rank := func(id uint64) int { // the dead first, then the draining, then the rest
		switch {
		case !s.healthy(id):
			return 0
		case s.IsDraining(id):
			return 1
		}
		return 2
	}
	order := slices.Clone(voters)
	slices.SortFunc(order, func(a, b uint64) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	order = slices.DeleteFunc(order, func(id uint64) bool { return id == s.cfg.ID })
	return order[:min(n, len(order))]
}

// forgottenInConf lists the forgotten ids still in the configuration (voters or
// learners), by id; never this replica's own.
func (s *Store) forgottenInConf() []uint64 {
	if mutKeepForgotten {
		return nil
	}
	var out []uint64
	for _, id := range slices.Concat(s.confState.GetVoters(), s.confState.GetLearners()) {
		if s.sm.forgotten[id] && id != s.cfg.ID {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// votersGuard refuses a change that removes remove and makes the learners add voters
// unless the voters of the new configuration that are healthy (members alive now, and
// this leader) form a quorum of it: they must be able to commit the change and what
// follows.
func (s *Store) votersGuard(remove, add []uint64) error {
	return quorumGuard(s.votersWithout(remove...), add, s.healthy)
}

// votersWithout lists the voters of the applied configuration but ids.
func (s *Store) votersWithout(ids ...uint64) []uint64 {
	return slices.DeleteFunc(slices.Clone(s.confState.GetVoters()), func(id uint64) bool {
		return slices.Contains(ids, id)
	})
}

// quorumGuard is votersGuard's rule: the healthy voters of voters plus add are a quorum.
func quorumGuard(voters, add []uint64, healthy func(uint64) bool) error {
	next := append(slices.Clone(voters), add...)
	n := 0
	for _, id := range next {
		if healthy(id) {
			n++
		}
	}
	if n < len(next)/2+1 {
		return fmt.Errorf("%w: quorum: %d of the %d voters would be healthy", ErrGuard, n, len(next))
	}
	return nil
}

// confChangeDone lets the next configuration change go as soon as one is applied: raft
// takes one at a time and turns one proposed meanwhile into an empty entry, so a learner
// or a promotion proposed while another change was pending is proposed again now rather
// than after RequestTimeoutTicks.
func (s *Store) confChangeDone() {
	s.promoteUntil = 0
	clear(s.learnerUntil)
}
