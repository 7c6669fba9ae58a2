package meta

import (
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// Step feeds a raft message a peer sent to this replica. Messages are best effort (raft
// retries what matters), so one that cannot be taken now is dropped: before recovery
// finished, after a failure, addressed to another replica, or of a local type.
func (s *Store) Step(nowNs int64, m *raftpb.Message) {
	if s.state != stateReady || m.GetTo() != s.cfg.ID || raft.IsLocalMsg(m.GetType()) {
		return
	}
	if s.lostState(m) {
		return
	}
	_ = s.rn.Step(m) // refused only for unknown peers' responses: dropped too
	s.drive()
}

// lostState stops the replica when a leader's heartbeat names as committed an index past
// the end of its log. A leader commits at most what this replica acknowledged as durable
// (its match index), and a replica acknowledges only what it synced, so the replica lost
// durable state: its directory was wiped or replaced under the same member id. etcd raft
// would panic on the heartbeat ("tocommit out of range"); the node stops instead with a
// reason that names the way back.
func (s *Store) lostState(m *raftpb.Message) bool {
	if mutLostState || m.GetType() != raftpb.MsgHeartbeat {
		return false
	}
	if m.GetTerm() < s.rn.BasicStatus().GetTerm() {
		return false // raft ignores a stale leader's heartbeat
	}
	last, err := s.ms.LastIndex()
	if err != nil || m.GetCommit() <= last {
		return false
	}
	s.fail(fmt.Errorf("%w: leader %d says index %d is committed here, this replica ends at %d; "+
		"forget member %d, then join under a new id", ErrLostState, m.GetFrom(), m.GetCommit(),
		last, s.cfg.ID))
	return true
}

// ReportUnreachable tells raft a message to peer could not be delivered, so the leader
// stops pipelining to it until it answers again.
func (s *Store) ReportUnreachable(peer uint64) {
	if s.state == stateReady {
		s.rn.ReportUnreachable(peer)
	}
}

// ID is this replica's raft id.
func (s *Store) ID() uint64 { return s.cfg.ID }

// LeaderID is the leader this replica knows of, 0 for none.
func (s *Store) LeaderID() uint64 {
	if s.state != stateReady {
		return 0
	}
	return s.rn.BasicStatus().Lead
}

// Term is this replica's current raft term (0 before recovery).
func (s *Store) Term() uint64 {
	if s.state != stateReady {
		return 0
	}
	return s.rn.BasicStatus().GetTerm()
}

// Voters lists the voters of the applied configuration, ascending.
func (s *Store) Voters() []uint64 {
	v := slices.Clone(s.confState.GetVoters())
	slices.Sort(v)
	return v
}

// Learners lists the learners of the applied configuration (members that joined after
// the initial voters), ascending.
func (s *Store) Learners() []uint64 {
	l := slices.Clone(s.confState.GetLearners())
	slices.Sort(l)
	return l
}

// reportSnapshotsSent tells raft each snapshot it asked to send is on its way. Raft
// leaves a follower it sent a snapshot to alone until told; messages are best effort
// here, so the leader is told at once: if the snapshot is lost, the follower's next
// answer (or its silence) makes the leader probe it again and send another.
func (s *Store) reportSnapshotsSent(msgs []*raftpb.Message) {
	for _, m := range msgs {
		if m.GetType() == raftpb.MessageType_MsgSnap {
			s.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFinish)
		}
	}
}

// installSnapshot persists a snapshot the leader sent, through the same steps as a local
// one (snapshot.go): snap.tmp written, synced, read back, renamed over snap, directory
// synced. Only then does raft's storage take it, the topics become its state, and the log
// is rewritten with the Ready's HardState and entries; the rest of the Ready (messages,
// committed entries after the snapshot) is finished once that rewrite is durable.
func (s *Store) installSnapshot(rd raft.Ready) {
	assert.That(
		s.phase == phaseIdle && s.job == nil,
		"meta: snapshot install while the pipeline is busy",
	)
	md := rd.Snapshot.GetMetadata()
	sn := snapshot{Index: md.GetIndex(), Term: md.GetTerm(), Data: rd.Snapshot.GetData(),
		Conf: proto.Clone(md.GetConfState()).(*raftpb.ConfState)}
	m, err := decodeState(sn.Data, sn.Index)
	if err != nil {
		s.fail(fmt.Errorf("%w: snapshot at %d from the leader: %w", ErrCorrupt, sn.Index, err))
		return
	}
	sn.m = m
	s.phase = phaseSnapshot
	s.job = &snapJob{snap: sn, file: appendSnapFile(nil, encodeSnapshotBody(sn)), received: &rd}
	s.issue(purposeSnapshot, disk.Op{Kind: disk.KindCreate, Name: s.path(SnapTmpFile)})
}

// snapshotInstalled runs once a received snapshot is durable under its final name.
func (s *Store) snapshotInstalled(sn snapshot, rd *raft.Ready) {
	assert.That(
		s.ms.ApplySnapshot(rd.Snapshot) == nil,
		"meta: memory storage refused the leader's snapshot",
	)
	s.sm, s.confState = sn.m, sn.Conf
	s.applied, s.appliedTerm, s.snapIndex = sn.Index, sn.Term, sn.Index
	s.topicDeletes++ // the snapshot may have deleted any topic
	if s.cfg.OnApply != nil {
		s.cfg.OnApply(s.applied, s.appliedTerm)
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		s.hs = hardStateOf(rd.HardState)
		assert.That(s.ms.SetHardState(rd.HardState) == nil, "meta: memory storage refused the hard state")
	}
	if len(rd.Entries) > 0 {
		assert.That(s.ms.Append(rd.Entries) == nil, "meta: memory storage refused the entries")
	}
	rd.Snapshot = nil
	s.rw = &rewriteJob{finish: rd}
	s.startRewrite()
}
