package meta

import (
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
)

// DefaultDeadAfterNs: a member the leader has not heard from for this long is marked dead
// (and a dead one it hears from again, alive).
const DefaultDeadAfterNs = 5_000_000_000

// Heartbeat records that member id was heard from at nowNs. The node calls it for every
// heartbeat a peer sends it; only the leader's records matter (the controller runs
// there), and a leader hears itself on every Tick.
func (s *Store) Heartbeat(nowNs int64, id uint64) {
	if id != 0 {
		s.heard[id] = nowNs
	}
}

// control is the leader's membership duty, run on Tick: every member whose liveness in
// the state disagrees with what the leader heard in the last DeadAfterNs gets a
// SetMemberAlive through the log. A new leader first waits DeadAfterNs (heartbeats went
// to the old one meanwhile), and the controller proposes only once the leader has applied
// its whole durable log and an entry of its term (its view of the members is current),
// at most one change per member at a time.
func (s *Store) control(nowNs int64) {
	st := s.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		s.leaderSinceNs = 0
		return
	}
	if s.leaderSinceNs == 0 {
		s.leaderSinceNs = nowNs
	}
	s.heard[s.cfg.ID] = nowNs
	last, err := s.ms.LastIndex()
	if nowNs-s.leaderSinceNs < s.cfg.DeadAfterNs || err != nil || s.applied != last || s.appliedTerm != st.GetTerm() {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(s.sm.members)) {
		heard, ok := s.heard[id]
		recent := ok && nowNs-heard < s.cfg.DeadAfterNs
		if s.sm.members[id].Alive == recent || s.controlUntil[id] > s.ticks {
			continue
		}
		if s.propose(nowNs, 0, Command{Kind: SetMemberAlive, Member: id, Alive: recent}) {
			s.controlUntil[id] = s.ticks + RequestTimeoutTicks
		}
	}
}
