package meta

import "go.etcd.io/raft/v3/raftpb"

// Hooks for the external tests (package meta_test).

// LogLastIndex is the last index of the persisted log.
func LogLastIndex(s *Store) uint64 {
	if s.ms == nil {
		return 0
	}
	last, _ := s.ms.LastIndex()
	return last
}

// Idle reports whether nothing is in flight: no disk op, no Ready, no snapshot.
func Idle(s *Store) bool {
	return s.state == stateReady && s.phase == phaseIdle && len(s.ops) == 0 && !s.rn.HasReady()
}

// AppliedCommands is the number of command entries the topics have applied: a replayed
// entry would count twice.
func AppliedCommands(s *Store) uint64 { return s.sm.commands }

// SnapshotIndex is the index of the newest durable snapshot.
func SnapshotIndex(s *Store) uint64 { return s.snapIndex }

// SnapshotTerm is the term of the newest durable snapshot.
func SnapshotTerm(s *Store) uint64 {
	sn, err := s.ms.Snapshot()
	if err != nil {
		panic(err)
	}
	return sn.GetMetadata().GetTerm()
}

// AppendLogFrame appends one raft.log frame, for tests that lay down files by hand.
func AppendLogFrame(dst []byte, term, vote, commit uint64, ents []*raftpb.Entry) []byte {
	return appendLogFrame(dst, hardState{Term: term, Vote: vote, Commit: commit}, ents)
}
