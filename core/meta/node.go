package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// startNode builds the RawNode over the recovered MemoryStorage. A fresh store bootstraps
// Config.Voters (conf change entries from index 1, persisted by the first Ready).
func (s *Store) startNode(bootstrap bool) error {
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        s.cfg.ID,
		ElectionTick:              ElectionTicks,
		HeartbeatTick:             HeartbeatTicks,
		Storage:                   s.ms,
		Applied:                   s.snapIndex,
		MaxSizePerMsg:             1 << 20,
		MaxCommittedSizePerReady:  1 << 20,
		MaxUncommittedEntriesSize: ProposalsMax * CommandBytesMax,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		ReadOnlyOption:            raft.ReadOnlySafe,
		Logger:                    discardLogger{},
		DisableProposalForwarding: true, // followers answer ErrNotLeader; see Propose
	})
	if err != nil {
		return err
	}
	if bootstrap {
		peers := make([]raft.Peer, len(s.cfg.Voters))
		for i, id := range s.cfg.Voters {
			peers[i] = raft.Peer{ID: id}
		}
		if err := rn.Bootstrap(peers); err != nil {
			return err
		}
	}
	s.rn = rn
	return nil
}

// drive hands raft's work to the disk, one Ready at a time. A Ready that changes the
// HardState or appends entries is written as one frame and fdatasynced before anything
// else of it happens (onReadyStep); one that does not is finished at once. A snapshot
// takes the pipeline when it is due, between two Readys.
func (s *Store) drive() {
	for range ReadysPerCallMax {
		if s.state != stateReady || s.phase != phaseIdle {
			return
		}
		if s.applied >= s.snapIndex+s.cfg.SnapshotEveryEntries {
			s.startSnapshot()
			return
		}
		s.maybeCampaign()
		if !s.rn.HasReady() {
			return
		}
		rd := s.rn.Ready()
		s.noteReadStates(rd.ReadStates)
		if rd.SoftState != nil && rd.RaftState != raft.StateLeader {
			s.dropUnconfirmedBarriers()
		}
		if !raft.IsEmptySnap(rd.Snapshot) { // a leader's MsgSnap: this replica was behind
			s.installSnapshot(rd)
			return
		}
		if len(rd.Entries) > 0 || !raft.IsEmptyHardState(rd.HardState) {
			s.persist(rd)
			return
		}
		s.finishReady(rd)
	}
}

// persist writes the Ready's HardState and entries as one frame at the end of raft.log.
func (s *Store) persist(rd raft.Ready) {
	var hs hardState
	if !raft.IsEmptyHardState(rd.HardState) {
		hs = hardStateOf(rd.HardState)
	}
	s.rd = rd
	s.rdFrame = appendLogFrame(s.rdFrame[:0], hs, rd.Entries)
	s.issue(
		purposeReady,
		disk.Op{Kind: disk.KindWriteAt, Name: s.path(LogFile), Off: s.logSize, Data: s.rdFrame},
	)
	s.phase = phaseWrite
}

func (s *Store) onReadyStep(res disk.Result) {
	if s.phase == phaseVerify {
		if s.onReadBack(purposeReady, res) {
			s.logSize += int64(len(s.rdFrame))
			rd := s.rd
			s.rd = raft.Ready{}
			s.finishReady(rd)
		}
		return
	}
	if res.Err != nil {
		// Never retried: after a failed fdatasync the kernel may have dropped the pages
		// while reporting them clean. The node restarts and recovers from the disk.
		s.fail(fmt.Errorf("%s %s: %w", res.Kind, LogFile, res.Err))
		return
	}
	switch s.phase {
	case phaseWrite:
		assert.That(res.Kind == disk.KindWriteAt, "meta: ready write completion out of order")
		s.issue(purposeReady, disk.Op{Kind: disk.KindSync, Name: s.path(LogFile)})
		s.phase = phaseSync
	case phaseSync:
		assert.That(res.Kind == disk.KindSync, "meta: ready sync completion out of order")
		s.phase = phaseVerify
		s.startReadBack(purposeReady, s.path(LogFile), s.logSize, s.rdFrame)
	default:
		assert.Fail("meta: ready completion while not persisting")
	}
}

// finishReady runs once the Ready's state is durable: raft's storage learns the entries,
// messages go out, committed entries are applied (and their proposals answered), and raft
// is told with Advance.
func (s *Store) finishReady(rd raft.Ready) {
	if !raft.IsEmptyHardState(rd.HardState) {
		s.hs = hardStateOf(rd.HardState)
		assert.That(s.ms.SetHardState(rd.HardState) == nil, "meta: memory storage refused the hard state")
	}
	if len(rd.Entries) > 0 {
		assert.That(s.ms.Append(rd.Entries) == nil, "meta: memory storage refused the entries")
	}
	s.out.Messages = append(s.out.Messages, rd.Messages...)
	s.reportSnapshotsSent(rd.Messages)
	if mutApplyUncommitted {
		s.applyEarly(rd)
	}
	if !s.apply(rd.CommittedEntries) {
		return
	}
	s.rn.Advance(rd)
	s.phase = phaseIdle
	s.answerBarriers()
}

// applyEarly is the applyearly mutation's bug: the commands this Ready made durable in
// the replica's own log change its state before raft reports them committed (and are not
// applied again when they are). Raft's own applied index is left alone.
func (s *Store) applyEarly(rd raft.Ready) {
	s.earlyApplied = max(s.earlyApplied, s.applied)
	for _, e := range rd.Entries {
		if e.GetIndex() != s.earlyApplied+1 {
			continue
		}
		s.earlyApplied++
		if p, err := decodeCommand(e.GetData()); e.GetType() == raftpb.EntryNormal &&
			len(e.GetData()) > 0 &&
			err == nil {
			_, _ = s.sm.applyProposal(p, e.GetIndex())
		}
	}
}

// apply applies committed entries in index order. It returns false when the store failed.
func (s *Store) apply(ents []*raftpb.Entry) bool {
	for _, e := range ents {
		assert.That(e.GetIndex() == s.applied+1, "meta: committed entries out of order")
		var err error
		switch e.GetType() {
		case raftpb.EntryNormal:
			if len(e.GetData()) > 0 { // empty: a new leader's first entry
				err = s.applyCommand(e)
			}
		case raftpb.EntryConfChange:
			var cc raftpb.ConfChange
			if err = proto.Unmarshal(e.GetData(), &cc); err == nil {
				s.confState = s.rn.ApplyConfChange(&cc)
				s.confChangeDone()
			}
		case raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err = proto.Unmarshal(e.GetData(), &cc); err == nil {
				s.confState = s.rn.ApplyConfChange(&cc)
				s.confChangeDone()
			}
		}
		if err != nil {
			// Every replica would stop at the same entry: skipping it would let replicas
			// of different versions diverge. The node needs a binary that reads it.
			s.fail(fmt.Errorf("%w: entry %d: %w", ErrCorrupt, e.GetIndex(), err))
			return false
		}
		s.applied, s.appliedTerm = e.GetIndex(), e.GetTerm()
		if s.cfg.OnApply != nil {
			s.cfg.OnApply(s.applied, s.appliedTerm)
		}
	}
	return true
}

func (s *Store) applyCommand(e *raftpb.Entry) error {
	p, err := decodeCommand(e.GetData())
	if err != nil {
		return err
	}
	if mutApplyUncommitted && e.GetIndex() <= s.earlyApplied {
		return nil // applied already, uncommitted (the applyearly mutation)
	}
	res, aerr := s.sm.applyProposal(p, e.GetIndex())
	if aerr == nil && p.Cmd.Kind == DeleteTopic {
		s.topicDeletes++
	}
	if isMemberKind(p.Cmd.Kind) {
		delete(s.controlUntil, p.Cmd.Member) // the controller may look at it again
	}
	if isMoveKind(p.Cmd.Kind) {
		delete(s.moveUntil, moveKey{p.Cmd.TopicID, p.Cmd.Part})
	}
	// The entry answers our proposal only if we proposed it as leader of the entry's term:
	// seqs restart with the process, terms do not repeat for a leader.
	if p.Node == s.cfg.ID {
		if pr, ok := s.proposals[p.Seq]; ok && pr.term == e.GetTerm() {
			delete(s.proposals, p.Seq)
			if errors.Is(aerr, errRecorded) && pr.refused != nil {
				aerr = pr.refused // the guard's refusal, recorded against the forward's copies
			}
			s.answer(pr.token, res, aerr)
		}
	}
	return nil
}

// maybeCampaign makes a sole voter campaign once at startup, as soon as raft allows it
// (every committed entry applied, conf changes included), so leadership does not wait for
// a randomized election timeout.
func (s *Store) maybeCampaign() {
	if s.campaigned {
		return
	}
	voters := s.confState.GetVoters()
	if len(voters) != 1 || voters[0] != s.cfg.ID || len(s.confState.GetVotersOutgoing()) > 0 {
		return
	}
	st := s.rn.BasicStatus()
	if st.RaftState == raft.StateLeader {
		s.campaigned = true
		return
	}
	if s.applied < st.GetCommit() {
		return
	}
	s.campaigned = true
	_ = s.rn.Campaign() // refused only when already leader or unpromotable: checked above
}

// Propose asks for cmd to be applied. The answer (a ProposeDone with token) comes once its
// entry is committed and applied on this replica, or at once with an error: the store is
// not ready, not the leader, at ProposalsMax, or the command is invalid. A leader whose
// replica holds every entry of its log applied also answers ErrExists and ErrNotFound at
// once; otherwise the apply decides. nowNs becomes the topic's CreatedAtMs.
//
// Token 0 is the store's own (the controller's): never use it.
func (s *Store) Propose(nowNs int64, token uint64, cmd Command) {
	if s.propose(nowNs, token, cmd, ProposalID{}) {
		s.drive()
	}
}

// ProposeForwarded is Propose for a follower's write, forwarded as the proposal id
// (forwards.go): the entry carries it, and a copy of the request proposed again, here or
// by any leader, is refused at its apply (ErrDuplicate when the first copy applied
// without an error, else ErrStale), or at once when this replica already refuses it. The
// topics' check and the guards refuse it only through the log, so that its id is
// recorded before its refusal is answered.
func (s *Store) ProposeForwarded(nowNs int64, token uint64, cmd Command, id ProposalID) {
	if s.propose(nowNs, token, cmd, id) {
		s.drive()
	}
}

// propose hands cmd to raft, or answers it at once; it reports whether raft took it.
func (s *Store) propose(nowNs int64, token uint64, cmd Command, id ProposalID) bool {
	switch s.state {
	case stateFailed:
		s.answer(token, result{}, s.failure)
		return false
	case stateNew, stateRecovering:
		s.answer(token, result{}, ErrNotLeader)
		return false
	}
	c, err := cmd.normalize()
	if err != nil {
		s.answer(token, result{}, err)
		return false
	}
	st := s.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		s.answer(token, result{}, ErrNotLeader)
		return false
	}
	if len(s.proposals) >= ProposalsMax {
		s.answer(token, result{}, ErrBusy)
		return false
	}
	if !id.IsZero() {
		if err := s.sm.forwardVerdict(id); err != nil { // a refusal is never lifted
			s.answer(token, result{}, err)
			return false
		}
	}
	if s.fresh(st) && id.IsZero() { // a forward's refusals go through the log (forwards.go)
		if t, err := s.sm.check(c); err != nil {
			s.answer(token, result{Topic: t}, err)
			return false
		}
	}
	refused := s.membershipGuard(c, st)
	if refused != nil && id.IsZero() {
		s.answer(token, result{}, refused)
		return false
	}
	s.nextSeq++
	data := encodeCommand(proposalEntry{Node: s.cfg.ID, Seq: s.nextSeq, NowNs: nowNs, Cmd: c, Fwd: id,
		Refused: refused != nil})
	if len(data) > CommandBytesMax {
		s.answer(token, result{}, invalid("command over %d bytes", CommandBytesMax))
		return false
	}
	if err := s.rn.Propose(data); err != nil {
		s.answer(token, result{}, ErrBusy) // the uncommitted tail is full, or a transfer runs
		return false
	}
	s.proposals[s.nextSeq] = &proposal{
		token:    token,
		term:     st.GetTerm(),
		deadline: s.ticks + RequestTimeoutTicks,
		refused:  refused,
	}
	return true
}

// fresh reports whether the local topics are the state at the end of the leader's log: the
// leader has applied an entry of its own term and every entry it holds, and nothing is on
// its way to the disk. Only then may a proposal be refused without going through the log.
func (s *Store) fresh(st raft.BasicStatus) bool {
	last, err := s.ms.LastIndex()
	return err == nil && st.RaftState == raft.StateLeader && s.phase == phaseIdle &&
		!s.rn.HasReady() && s.applied == last && s.appliedTerm == st.GetTerm()
}

// Barrier asks for a ReadIndex: the answer comes once this replica has applied every entry
// committed when the leader confirmed its leadership (the self leader goes through the
// same path), or with ErrNotLeader when no leader is known.
func (s *Store) Barrier(nowNs int64, token uint64) {
	switch s.state {
	case stateFailed:
		s.answerBarrier(token, s.failure)
		return
	case stateNew, stateRecovering:
		s.answerBarrier(token, ErrNotLeader)
		return
	}
	if s.rn.BasicStatus().Lead == raft.None {
		s.answerBarrier(token, ErrNotLeader)
		return
	}
	if len(s.barriers) >= BarriersMax {
		s.answerBarrier(token, ErrBusy)
		return
	}
	s.nextReadID++
	s.barriers[s.nextReadID] = &barrier{token: token, deadline: s.ticks + RequestTimeoutTicks}
	s.rn.ReadIndex(binary.LittleEndian.AppendUint64(nil, s.nextReadID))
	s.drive()
}

func (s *Store) noteReadStates(rss []raft.ReadState) {
	for _, rs := range rss {
		if len(rs.RequestCtx) != 8 {
			continue
		}
		if b, ok := s.barriers[binary.LittleEndian.Uint64(rs.RequestCtx)]; ok {
			b.index, b.hasIndex = rs.Index, true
		}
	}
}

// answerBarriers answers every confirmed barrier whose read index is applied.
func (s *Store) answerBarriers() {
	for _, id := range slices.Sorted(maps.Keys(s.barriers)) {
		if b := s.barriers[id]; b.hasIndex && s.applied >= b.index {
			delete(s.barriers, id)
			s.answerBarrier(b.token, nil)
		}
	}
}

// dropUnconfirmedBarriers answers ErrNotLeader to barriers the leader has not confirmed
// when this replica is no longer leader: raft forgets its pending read requests then.
func (s *Store) dropUnconfirmedBarriers() {
	for _, id := range slices.Sorted(maps.Keys(s.barriers)) {
		if b := s.barriers[id]; !b.hasIndex {
			delete(s.barriers, id)
			s.answerBarrier(b.token, ErrNotLeader)
		}
	}
}
