package meta

import (
	"fmt"
	"math"

	"go.etcd.io/raft/v3"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// snapJob is a snapshot on its way to disk.
type snapJob struct {
	snap     snapshot
	file     []byte
	received *raft.Ready // the Ready that brought a leader's snapshot; nil for a local one
}

// rewriteJob is raft.log being rewritten.
type rewriteJob struct {
	buf    []byte
	finish *raft.Ready // finished once the rewrite is durable (a received snapshot's Ready)
}

// startSnapshot writes the state at the applied index to snap, then rewrites raft.log
// without the entries it covers. The steps, each issued after the previous one completed:
//
//	create snap.tmp → write → fdatasync → rename to snap → sync dir
//	  → compact raft's storage → create raft.log.tmp → write → fdatasync
//	  → rename to raft.log → sync dir
//
// The Ready pipeline waits meanwhile (proposals still enter raft), so no frame is
// appended to a raft.log that is about to be replaced. doc.go walks every crash point.
func (s *Store) startSnapshot() {
	assert.That(s.phase == phaseIdle && s.job == nil, "meta: snapshot while the pipeline is busy")
	assert.That(s.applied > s.snapIndex, "meta: snapshot without new entries")
	s.phase = phaseSnapshot
	sn := snapshot{
		Index: s.applied, Term: s.appliedTerm, Data: encodeState(s.sm),
		Conf: proto.Clone(s.confState).(*raftpb.ConfState),
	}
	s.job = &snapJob{snap: sn, file: appendSnapFile(nil, encodeSnapshotBody(sn))}
	s.issue(purposeSnapshot, disk.Op{Kind: disk.KindCreate, Name: s.path(SnapTmpFile)})
}

func (s *Store) onSnapshotStep(res disk.Result) {
	assert.That(s.phase == phaseSnapshot && s.job != nil, "meta: snapshot step while not snapshotting")
	if res.Kind == disk.KindReadAt {
		if s.onReadBack(purposeSnapshot, res) {
			s.issue(
				purposeSnapshot,
				disk.Op{Kind: disk.KindRename, Name: s.path(SnapTmpFile), NewName: s.path(SnapFile)},
			)
		}
		return
	}
	if res.Err != nil {
		s.fail(fmt.Errorf("snapshot %s: %w", res.Kind, res.Err))
		return
	}
	switch res.Kind {
	case disk.KindCreate:
		s.issue(
			purposeSnapshot,
			disk.Op{Kind: disk.KindWriteAt, Name: s.path(SnapTmpFile), Data: s.job.file},
		)
	case disk.KindWriteAt:
		s.issue(purposeSnapshot, disk.Op{Kind: disk.KindSync, Name: s.path(SnapTmpFile)})
	case disk.KindSync:
		// Read snap.tmp back before it replaces snap: a silently damaged snapshot under
		// the final name would make every later recovery fail (row S3).
		s.startReadBack(purposeSnapshot, s.path(SnapTmpFile), 0, s.job.file)
	case disk.KindRename:
		s.issue(purposeSnapshot, disk.Op{Kind: disk.KindSyncDir, Name: s.cfg.Dir})
	case disk.KindSyncDir:
		// The snapshot is durable under its final name: only now may the log lose the
		// entries it covers.
		sn, received := s.job.snap, s.job.received
		s.job = nil
		if received != nil {
			s.snapshotInstalled(sn, received)
			return
		}
		_, err := s.ms.CreateSnapshot(sn.Index, sn.Conf, sn.Data)
		assert.That(err == nil, "meta: memory storage refused the snapshot")
		assert.That(s.ms.Compact(sn.Index) == nil, "meta: memory storage refused the compaction")
		s.snapIndex = sn.Index
		s.startRewrite()
	default:
		assert.Failf("meta: unexpected snapshot step %v", res.Kind)
	}
}

// startRewrite replaces raft.log by one holding the durable HardState and every entry of
// raft's storage (those after the snapshot): written to raft.log.tmp, synced, renamed over
// raft.log, directory synced. Until the rename the old raft.log is whole; after it the
// new one is, so a crash at any point leaves one complete log.
func (s *Store) startRewrite() {
	s.phase = phaseRewrite
	first, _ := s.ms.FirstIndex()
	last, _ := s.ms.LastIndex()
	var ents []*raftpb.Entry
	if first <= last {
		var err error
		ents, err = s.ms.Entries(first, last+1, math.MaxUint64)
		assert.That(err == nil, "meta: memory storage lost entries")
	}
	var buf []byte
	if !s.hs.isEmpty() || len(ents) > 0 {
		buf = appendRewriteFrames(nil, s.hs, ents)
	}
	var finish *raft.Ready
	if s.rw != nil {
		finish = s.rw.finish
	}
	s.rw = &rewriteJob{buf: buf, finish: finish}
	s.issue(purposeRewrite, disk.Op{Kind: disk.KindCreate, Name: s.path(LogTmpFile)})
}

func (s *Store) onRewriteStep(nowNs int64, res disk.Result) {
	assert.That(s.phase == phaseRewrite && s.rw != nil, "meta: rewrite step while not rewriting")
	if res.Kind == disk.KindReadAt {
		if s.onReadBack(purposeRewrite, res) {
			s.issue(
				purposeRewrite,
				disk.Op{Kind: disk.KindRename, Name: s.path(LogTmpFile), NewName: s.path(LogFile)},
			)
		}
		return
	}
	if res.Err != nil {
		s.fail(fmt.Errorf("log rewrite %s: %w", res.Kind, res.Err))
		return
	}
	switch res.Kind {
	case disk.KindCreate:
		if len(s.rw.buf) > 0 {
			s.issue(
				purposeRewrite,
				disk.Op{Kind: disk.KindWriteAt, Name: s.path(LogTmpFile), Data: s.rw.buf},
			)
			return
		}
		s.issue(purposeRewrite, disk.Op{Kind: disk.KindSync, Name: s.path(LogTmpFile)})
	case disk.KindWriteAt:
		s.issue(purposeRewrite, disk.Op{Kind: disk.KindSync, Name: s.path(LogTmpFile)})
	case disk.KindSync:
		if len(s.rw.buf) > 0 { // read the new log back before it replaces raft.log
			s.startReadBack(purposeRewrite, s.path(LogTmpFile), 0, s.rw.buf)
			return
		}
		s.issue(
			purposeRewrite,
			disk.Op{Kind: disk.KindRename, Name: s.path(LogTmpFile), NewName: s.path(LogFile)},
		)
	case disk.KindRename:
		s.issue(purposeRewrite, disk.Op{Kind: disk.KindSyncDir, Name: s.cfg.Dir})
	case disk.KindSyncDir:
		s.logSize = int64(len(s.rw.buf))
		finish := s.rw.finish
		s.rw = nil
		s.phase = phaseIdle
		if s.state == stateRecovering {
			s.finishRecovery(nowNs)
		}
		if finish != nil {
			s.finishReady(*finish)
			s.drive()
		}
	default:
		assert.Failf("meta: unexpected rewrite step %v", res.Kind)
	}
}
