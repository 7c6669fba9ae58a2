package meta

import (
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// DefaultDeadAfterNs: a member the leader has not heard from for this long is marked dead
// (and a dead one it hears from again, alive).
const DefaultDeadAfterNs = 5_000_000_000

type heard struct {
	atNs int64
	addr string
}

// Heartbeat records that node id, reached at addr, was heard from at nowNs. The node
// layer calls it for every heartbeat a peer sends and for its own; only the leader's
// records matter (the controller runs there).
func (s *Store) Heartbeat(nowNs int64, id uint64, addr string) {
	if id != 0 && addr != "" && len(addr) <= AddrBytesMax {
		s.heard[id] = heard{atNs: nowNs, addr: addr}
	}
}

// control is the leader's membership duty, run on Tick, through the log only:
//   - a node heard from that is not a member (or moved to another address) joins;
//   - a dead member heard from within DeadAfterNs is marked alive;
//   - a live member silent for DeadAfterNs is marked dead, but only after this replica
//     has led for DeadAfterNs (the heartbeats went to its predecessor before);
//   - a live member not in the raft configuration is added as a learner, and live learners
//     caught up with the log are made voters up to VotersTarget (promote.go);
//   - a forgotten member (forget.go) leaves the raft configuration, and is never a member
//     again however often it is heard.
//
// It proposes only once the leader has applied its whole durable log and an entry of its
// term (its view of the members is current), at most one change per member at a time.
func (s *Store) control(nowNs int64) {
	st := s.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		s.leaderSinceNs = 0
		return
	}
	if s.leaderSinceNs == 0 {
		s.leaderSinceNs = nowNs
		s.rebalance = true // whatever the last leader was doing, look again
	}
	last, err := s.ms.LastIndex()
	if err != nil || s.applied != last || s.appliedTerm != st.GetTerm() {
		return
	}
	judgeDead := nowNs-s.leaderSinceNs >= s.cfg.DeadAfterNs
	for _, id := range slices.Sorted(maps.Keys(s.heard)) {
		h := s.heard[id]
		m, ok := s.sm.members[id]
		if (!ok || m.Addr != h.addr) && nowNs-h.atNs < s.cfg.DeadAfterNs &&
			(!s.sm.forgotten[id] || mutNoTombstone) {
			s.controlPropose(nowNs, id, Command{Kind: JoinMember, Member: id, Addr: h.addr, Alive: true})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.sm.members)) {
		h, ok := s.heard[id]
		recent := ok && nowNs-h.atNs < s.cfg.DeadAfterNs
		if alive := s.sm.members[id].Alive; alive != recent && (recent || judgeDead) {
			s.controlPropose(nowNs, id, Command{Kind: SetMemberAlive, Member: id, Alive: recent})
		}
		if recent && !s.inConf(id) {
			s.addLearner(id)
		}
	}
	s.promote(st)
	s.leaveIfRemoved(st)
	s.controlMoves(nowNs)
}

// InConf reports whether id is a voter or a learner of the applied raft configuration.
func (s *Store) InConf(id uint64) bool { return s.inConf(id) }

// inConf reports whether id is a voter or a learner of the raft configuration.
func (s *Store) inConf(id uint64) bool {
	return slices.Contains(s.confState.GetVoters(), id) ||
		slices.Contains(s.confState.GetLearners(), id) ||
		slices.Contains(s.confState.GetLearnersNext(), id)
}

// addLearner proposes a member that is not in the raft configuration (a node that joined
// after the initial voters) as a learner: it then receives the log and serves reads from
// its own replica, without voting. Raft takes one configuration change at a time (a
// second one proposed meanwhile becomes an empty entry), so this waits like any control
// proposal and is tried again after RequestTimeoutTicks.
func (s *Store) addLearner(id uint64) {
	if s.learnerUntil[id] > s.ticks {
		return
	}
	cc := raftpb.ConfChange{Type: raftpb.ConfChangeAddLearnerNode.Enum(), NodeId: new(id)}
	if s.rn.ProposeConfChange(&cc) == nil {
		s.learnerUntil[id] = s.ticks + RequestTimeoutTicks
	}
}

func (s *Store) controlPropose(nowNs int64, id uint64, c Command) {
	if s.controlUntil[id] > s.ticks {
		return
	}
	if s.propose(nowNs, 0, c, ProposalID{}) {
		s.controlUntil[id] = s.ticks + RequestTimeoutTicks
	}
}
