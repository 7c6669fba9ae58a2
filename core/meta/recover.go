package meta

import (
	"fmt"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

type recPhase uint8

const (
	recList recPhase = iota + 1
	recReadSnap
	recReadLog
	recRewrite
)

// recovery is the state of Open: list the directory, read snap, read raft.log frame by
// frame, decide (doc.go's table), rewrite raft.log from the decision, start raft.
type recovery struct {
	phase   recPhase
	hasSnap bool
	hasLog  bool

	buf      []byte // the file being read, from offset 0
	readErrs int    // failed reads of the current position
	retries  int    // re-reads of the damage at damageAt
	damageAt int    // offset of the damaged frame being re-read, -1 for none
	parsed   int    // raft.log bytes decoded into frames
	frames   int
	snap     *snapshot
	hs       hardState
	hasHS    bool
	ents     []*raftpb.Entry // after the snapshot index, contiguous
	skipped  int             // entries at or below the snapshot index (row L6)
	// The log's newest entry at the snapshot index, if it has one (row L8).
	hasAtBase  bool
	termAtBase uint64
	bootstrap  bool
	notes      []string
}

func (rc *recovery) note(format string, args ...any) {
	rc.notes = append(rc.notes, fmt.Sprintf(format, args...))
}

// Open starts recovery. Proposals and barriers are answered ErrNotLeader until Ready
// reports Recovered.
func (s *Store) Open(nowNs int64) {
	assert.That(s.state == stateNew, "meta: Open called twice")
	s.state = stateRecovering
	s.lastTickNs = nowNs
	s.rec = &recovery{phase: recList, damageAt: -1}
	s.issue(purposeRecover, disk.Op{Kind: disk.KindList, Name: s.cfg.Dir})
}

func (s *Store) recoverStep(res disk.Result) {
	switch s.rec.phase {
	case recList:
		s.onList(res)
	case recReadSnap, recReadLog:
		s.onRead(res)
	default:
		assert.Failf("meta: recovery op in phase %v", s.rec.phase)
	}
}

func (s *Store) onList(res disk.Result) {
	if res.Err != nil {
		s.fail(fmt.Errorf("listing %s: %w", s.cfg.Dir, res.Err))
		return
	}
	rc := s.rec
	for _, name := range res.Names {
		switch name {
		case SnapFile:
			rc.hasSnap = true
		case LogFile:
			rc.hasLog = true
		}
	}
	if rc.hasSnap {
		rc.phase = recReadSnap
		s.readFrom(SnapFile, 0)
		return
	}
	rc.note("S1 no %s: start from the empty state", SnapFile)
	s.startLogRead()
}

func (s *Store) startLogRead() {
	rc := s.rec
	if !rc.hasLog {
		rc.note("L1 no %s: no entries", LogFile)
		s.decide()
		return
	}
	rc.phase = recReadLog
	rc.buf, rc.retries, rc.readErrs, rc.damageAt = nil, 0, 0, -1
	s.readFrom(LogFile, 0)
}

func (s *Store) readFrom(name string, off int) {
	s.issue(
		purposeRecover,
		disk.Op{Kind: disk.KindReadAt, Name: s.path(name), Off: int64(off), Len: ReadChunkBytes},
	)
}

func (rc *recovery) fileName() string {
	if rc.phase == recReadSnap {
		return SnapFile
	}
	return LogFile
}

// onRead collects the file being read chunk by chunk; a read shorter than asked is its end.
func (s *Store) onRead(res disk.Result) {
	rc := s.rec
	name := rc.fileName()
	if res.Err != nil {
		if rc.readErrs < ReadRetriesMax {
			rc.readErrs++
			s.readFrom(name, len(rc.buf))
			return
		}
		s.fail(fmt.Errorf("reading %s at %d: %w", name, len(rc.buf), res.Err))
		return
	}
	rc.readErrs = 0
	rc.buf = append(rc.buf, res.Data...)
	limit := LogBytesMax
	if rc.phase == recReadSnap {
		limit = SnapBytesMax
	}
	if len(rc.buf) > limit {
		s.fail(fmt.Errorf("%w: %s larger than %d bytes", ErrCorrupt, name, limit))
		return
	}
	if len(res.Data) == ReadChunkBytes {
		s.readFrom(name, len(rc.buf))
		return
	}
	if rc.phase == recReadSnap {
		s.onSnapRead()
	} else {
		s.onLogRead()
	}
}

func (s *Store) onSnapRead() {
	rc := s.rec
	sn, err := decodeSnapFile(rc.buf)
	if err != nil {
		if rc.retries < ReadRetriesMax {
			rc.retries++ // a read may be corrupted in passing: read it again before deciding
			rc.buf = nil
			s.readFrom(SnapFile, 0)
			return
		}
		rc.note("S3 %s fails its check (%v): fail", SnapFile, err)
		s.fail(fmt.Errorf("%w: %s fails its check: %w", ErrCorrupt, SnapFile, err))
		return
	}
	rc.note("S2 %s at index %d term %d: %d topics", SnapFile, sn.Index, sn.Term, len(sn.m.byName))
	rc.snap = &sn
	s.startLogRead()
}

// onLogRead applies rows L2 to L5 to the frames read so far.
func (s *Store) onLogRead() {
	rc := s.rec
	for rc.parsed < len(rc.buf) {
		f, n, err := decodeLogFrame(rc.buf[rc.parsed:])
		if err == nil {
			if !s.addFrame(f) {
				return
			}
			rc.parsed += n
			rc.frames++
			continue
		}
		if rc.parsed != rc.damageAt {
			rc.damageAt, rc.retries = rc.parsed, 0
		}
		if rc.retries < ReadRetriesMax {
			rc.retries++ // a read may be corrupted in passing: read from the damage again
			rc.buf = rc.buf[:rc.parsed]
			s.readFrom(LogFile, rc.parsed)
			return
		}
		if findValidFrame(rc.buf, rc.parsed+1) {
			rc.note("L4 %s@%d fails its check (%v) and valid frames follow: fail", LogFile, rc.parsed, err)
			s.fail(
				fmt.Errorf("%w: %s@%d fails its check and valid frames follow", ErrCorrupt, LogFile, rc.parsed),
			)
			return
		}
		rc.note(
			"L3 %s@%d torn tail of %d bytes (%v): drop it",
			LogFile,
			rc.parsed,
			len(rc.buf)-rc.parsed,
			err,
		)
		break
	}
	rc.note("L2 %s: %d frames, %d bytes kept", LogFile, rc.frames, rc.parsed)
	s.decide()
}

// addFrame takes one frame's HardState and entries: an entry at index i replaces every
// entry at or after i, as raft's Ready contract says.
func (s *Store) addFrame(f logFrame) bool {
	rc := s.rec
	if f.HasHardState {
		rc.hs, rc.hasHS = f.HardState, true
	}
	base := rc.base()
	for _, e := range f.Entries {
		i := e.GetIndex()
		if i <= base {
			rc.skipBelowSnapshot(e, base)
			continue
		}
		if last := base + uint64(len(rc.ents)); i > last+1 {
			rc.note("L5 %s: entry %d follows entry %d: fail", LogFile, i, last)
			s.fail(fmt.Errorf("%w: %s misses entries %d to %d", ErrCorrupt, LogFile, last+1, i-1))
			return false
		}
		rc.ents = append(rc.ents[:i-base-1], e)
	}
	return true
}

// skipBelowSnapshot takes an entry the snapshot covers (row L6). It still replaces every
// entry at or after its index: those after the snapshot go, and the log's entry at the
// snapshot index is remembered for row L8.
func (rc *recovery) skipBelowSnapshot(e *raftpb.Entry, base uint64) {
	rc.skipped++
	rc.ents = rc.ents[:0]
	rc.hasAtBase = e.GetIndex() == base
	rc.termAtBase = e.GetTerm()
}

// dropForeignSuffix applies row L8. A snapshot received from the leader is made durable
// before raft.log is rewritten, so a crash between the two leaves the old log, whose
// entries after the snapshot index may be a conflicting suffix from an older term. Raft
// keeps the entries after a snapshot only when its log holds the snapshot's own entry
// (index and term); otherwise the snapshot replaces the whole log, and so does recovery.
func (rc *recovery) dropForeignSuffix() {
	if rc.snap == nil || len(rc.ents) == 0 || !rc.hasAtBase || rc.termAtBase == rc.snap.Term {
		return
	}
	rc.note("L8 %s holds entry %d at term %d, the snapshot term %d: drop its %d entries after it",
		LogFile, rc.snap.Index, rc.termAtBase, rc.snap.Term, len(rc.ents))
	rc.ents = nil
}

func (rc *recovery) base() uint64 {
	if rc.snap == nil {
		return 0
	}
	return rc.snap.Index
}

// decide turns what was read into raft's storage and the topics, then rewrites raft.log.
func (s *Store) decide() {
	rc := s.rec
	base, baseTerm := rc.base(), uint64(0)
	if rc.snap != nil {
		baseTerm = rc.snap.Term
	}
	if rc.skipped > 0 {
		rc.note("L6 skip %d entries at or below the snapshot index %d", rc.skipped, base)
	}
	rc.dropForeignSuffix()
	hs := rc.hs
	if rc.snap != nil {
		hs.Term, hs.Commit = max(hs.Term, baseTerm), max(hs.Commit, base)
	}
	last := base + uint64(len(rc.ents))
	if err := rc.logFits(hs, last, baseTerm); err != nil {
		s.fail(err)
		return
	}
	s.ms = raft.NewMemoryStorage()
	s.confState = &raftpb.ConfState{}
	if sn := rc.snap; sn != nil {
		err := s.ms.ApplySnapshot(&raftpb.Snapshot{Data: sn.Data, Metadata: &raftpb.SnapshotMetadata{
			ConfState: sn.Conf, Index: new(sn.Index), Term: new(sn.Term),
		}})
		assert.That(err == nil, "meta: memory storage refused the recovered snapshot")
		s.sm, s.confState = sn.m, sn.Conf
		s.snapIndex, s.applied, s.appliedTerm = sn.Index, sn.Index, sn.Term
	}
	if !hs.isEmpty() {
		s.hs = hs
		assert.That(s.ms.SetHardState(hs.pb()) == nil, "meta: memory storage refused the hard state")
	}
	assert.That(s.ms.Append(rc.ents) == nil, "meta: memory storage refused the recovered entries")
	if rc.snap == nil && hs.isEmpty() && len(rc.ents) == 0 {
		if slices.Contains(s.cfg.Voters, s.cfg.ID) {
			rc.bootstrap = true
			rc.note("B nothing recovered: bootstrap the initial voters")
		} else {
			rc.note("J nothing recovered, not an initial voter: wait for the leader to add it as a learner")
		}
	}
	rc.note("W rewrite %s: hard state %d/%d/%d, entries %d..%d",
		LogFile, hs.Term, hs.Vote, hs.Commit, base+1, last)
	rc.phase = recRewrite
	s.startRewrite()
}

// logFits applies row L7: entry terms never go backwards and the hard state fits the log.
func (rc *recovery) logFits(hs hardState, last, baseTerm uint64) error {
	term := baseTerm
	for _, e := range rc.ents {
		if e.GetTerm() < term {
			rc.note("L7 entry %d has term %d after term %d: fail", e.GetIndex(), e.GetTerm(), term)
			return fmt.Errorf("%w: entry terms go backwards at %d", ErrCorrupt, e.GetIndex())
		}
		term = e.GetTerm()
	}
	if hs.Commit > last || hs.Term < term {
		rc.note("L7 commit %d past the last entry %d, or term %d below the log's %d: fail",
			hs.Commit, last, hs.Term, term)
		return fmt.Errorf("%w: hard state %+v does not fit the log (last %d, term %d)",
			ErrCorrupt, hs, last, term)
	}
	return nil
}

// finishRecovery starts raft once the rewritten raft.log is durable. Raft restarts with
// Applied = the snapshot index, so the first Readys re-apply the committed entries after it.
func (s *Store) finishRecovery(nowNs int64) {
	rc := s.rec
	s.rec = nil
	if err := s.startNode(rc.bootstrap); err != nil {
		s.fail(err)
		return
	}
	s.state = stateReady
	s.lastTickNs = nowNs
	s.drive()
	if s.state == stateFailed {
		return
	}
	last, _ := s.ms.LastIndex()
	s.out.Recovered = &Recovery{
		SnapshotIndex: s.snapIndex, CommitIndex: s.hs.Commit, LastIndex: last, AppliedIndex: s.applied,
		Term: s.hs.Term, Topics: len(s.sm.byName), Decisions: rc.notes,
	}
}
