package meta

// The controller's move duty (Config.Rebalance), run by the leader on Tick after its
// membership duty, through the log only:
//   - a move whose source or destination is marked dead is aborted (a copy needs both
//     ends; the source keeps the partition, and the planner tries again once they live);
//   - while a rebalance is wanted (a new member joined, a Rebalance was applied, or this
//     replica just became the leader) or a live draining member owns partitions, the
//     planner's moves (rebalance.go) are started, at most MovesInFlightMax at once; a
//     rebalance stops being wanted once the plan is empty.
//
// The copy itself is the nodes' (core/node move.go). Each command waits like a control
// proposal: one per partition until answered or RequestTimeoutTicks passed.

// MovesInFlightMax bounds the moves the controller runs at once: each copies a partition
// between two nodes while they serve.
const MovesInFlightMax = 2

func (s *Store) controlMoves(nowNs int64) {
	if !s.cfg.Rebalance {
		return
	}
	for _, mv := range s.sm.sortedMoves() {
		if !s.sm.members[mv.From].Alive || !s.sm.members[mv.To].Alive {
			s.moveProposal(nowNs, Command{Kind: AbortMove, TopicID: mv.TopicID, Part: mv.Partition})
		}
	}
	if s.sm.rebalanceAsked {
		s.sm.rebalanceAsked, s.rebalance = false, true
	}
	if !s.rebalance && !s.sm.drainingOwns() {
		return
	}
	if len(s.sm.moves) >= MovesInFlightMax {
		return
	}
	plan := s.sm.planMoves(MovesInFlightMax)
	if len(plan) == 0 && len(s.sm.moves) == 0 {
		s.rebalance = false
		return
	}
	for _, pm := range plan {
		s.moveProposal(nowNs, Command{Kind: StartMove, TopicID: pm.TopicID, Part: pm.Partition,
			Member: pm.To})
	}
}

// moveProposal proposes c for its partition unless one is pending there.
func (s *Store) moveProposal(nowNs int64, c Command) {
	k := moveKey{c.TopicID, c.Part}
	if s.moveUntil[k] > s.ticks {
		return
	}
	if s.propose(nowNs, 0, c, ProposalID{}) {
		s.moveUntil[k] = s.ticks + RequestTimeoutTicks
	}
}

// drainingOwns reports whether a live draining member owns a partition.
func (m *machine) drainingOwns() bool {
	for _, id := range m.liveMembers() {
		if m.members[id].Draining && m.ownedBy(id) > 0 {
			return true
		}
	}
	return false
}
