package node

import (
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/wire"
)

// Partition moves, the destination's side. The metastore decides a move (core/meta
// moves.go: StartMove, FreezeMove, CutOverMove, AbortMove); the destination carries it
// out, driven by what its replica applied:
//
//  1. wipe: a directory of the partition left here by an earlier owner or an earlier
//     attempt is removed (the reclaimer; deadPartitionDir takes it while wiping);
//  2. copy: the partition is opened here, not served (its owner is the source), with its
//     log starting at the source's oldest offset; the source's batches are fetched
//     (FetchRequest) and written with commitDurable at their own offsets and commit
//     times (plog.CommitCopy: fdatasync, read-back byte for byte) while the source goes
//     on taking commits;
//  3. freeze: once the copy is within MoveFreezeLagRecordsMax records of the source, or
//     has run MovePrecopyNsMax (a partition written faster than it copies), it proposes
//     FreezeMove; the source, once it applied it, takes no commit, lease or ack of the
//     partition and answers fetches "frozen" once its last commit is done;
//  4. tail: the copy fetches to the frozen high-watermark, then the ack state
//     (lease.ImportAcks, made durable by the lease manager that took it: a reopen of
//     the partition meanwhile fetches it again), and proposes CutOverMove: the destination owns
//     the partition under the next epoch and serves it as soon as its replica applies
//     that. Leases held at the source end with the move (those records are delivered
//     again); acks move with it.
//
// A move that ends otherwise (aborted, its topic deleted, an end forgotten) drops the
// copy and its files. A crash of the destination starts the copy again from the wipe, as
// does a source whose empty log reopened past the copy's end (copyBelowEmptySource).
// The source removes its copy only after the new owner serves (moveserve.go).

// Move tunables.
const (
	// MoveFetchBytesMax is the record bytes one fetch asks for.
	MoveFetchBytesMax = 4 << 20
	// MoveFetchTimeoutNs gives up on a fetch with no answer; it is asked again.
	MoveFetchTimeoutNs = 5_000_000_000
	// MoveRetryNs is the wait before a fetch after a refusal, an empty answer or a
	// failed proposal.
	MoveRetryNs = 100_000_000
	// MoveFrozenRetryNs is that wait while the move is frozen: the partition takes no
	// commit meanwhile, so the tail is asked for again soon.
	MoveFrozenRetryNs = 5_000_000
	// MoveFreezeLagRecordsMax: the copy asks for the freeze once it is this close to the
	// source's high-watermark, so that the freeze copies little.
	MoveFreezeLagRecordsMax = 1024
	// MovePrecopyNsMax bounds the copy before the freeze: past it the freeze is asked
	// whatever the lag, so a partition written faster than it copies still moves.
	MovePrecopyNsMax = 30_000_000_000
)

type movePhase uint8

const (
	moveWiping      movePhase = iota + 1 // an earlier copy's files are being removed
	moveOpening                          // the source's oldest offset is asked for
	moveCopying                          // batches are fetched and committed
	moveImporting                        // the ack state is being made durable
	moveCuttingOver                      // CutOverMove is proposed
	// moveAbandoned: a copy this process did not make, found frozen (an earlier process
	// of this node copied it and may have proposed the cutover): its files are kept, the
	// move is aborted, and if the earlier cutover applies first the copy is served.
	moveAbandoned
	// moveDiscarding: the partition became this node's by another way than this copy's
	// cutover (a forget's reassignment): the partial copy is removed before it is served.
	moveDiscarding
)

// moveCopy is one move to this node.
type moveCopy struct {
	key      partKey
	from     uint64
	epoch    uint32
	started  uint64 // meta.Move.Started: which move of the partition at that epoch
	phase    movePhase
	passes   uint64 // the reclaimer's passes when the wipe was asked
	base     uint64 // the copy's first offset: the source's oldest
	startNs  int64
	frozenNs int64 // when this node first saw the move frozen (0: not yet)
	afterNs  int64 // no fetch or proposal before then
	inFlight int   // fetches, commits and proposals in flight (a freeze's proposal and a fetch)
	proposed bool  // FreezeMove was asked (and not refused since)
	cutover  bool  // CutOverMove was asked: it may apply whatever its answer said
	runs     [][]plog.CopyBatch
	final    *wire.FetchResponse // the frozen answer that carries the ack state
	// importedInto is the lease manager that took the acks (importAcks); a reopen of the
	// partition makes another
	importedInto *lease.Manager
	srcHW        uint64
	bytesMoved   uint64
}

// moveState is what this node does for moves (both sides).
type moveState struct {
	copies   map[partKey]*moveCopy
	releases map[partKey]*release // moveserve.go
	stats    MoveStats
	acts     uint64    // fetches, commits, proposals and phase changes: collect runs until none
	stale    []partKey // open partitions marked stale, dropped by the next collect round

	// reported: the cutover epoch told to OnPartitionMoved, per partition
	reported map[partKey]uint32
}

// collectMoves moves the copies and releases on; it reports whether anything acted.
func (n *Node) collectMoves(nowNs int64) bool {
	if n.moves.copies == nil {
		return false // syncMoves has not run: the replica is not recovered
	}
	before := n.moves.acts
	dropped := n.discardStale(nowNs)
	n.advanceMoves(nowNs)
	return dropped || n.moves.acts != before
}

// MoveStats counts the moves this node carried out (as their destination).
type MoveStats struct {
	Started, Done, Dropped uint64
	BytesCopied            uint64
	FreezeNs               Histogram // from the freeze applied here to the cutover applied here
	Released               uint64    // copies this node removed after the new owner served
}

// MoveStats returns the move counts.
func (n *Node) MoveStats() MoveStats { return n.moves.stats }

// syncMoves brings the copies in line with the replica's moves: a move to this node
// starts a copy; a copy whose move ended is done (this node owns the partition) or
// dropped.
func (n *Node) syncMoves(nowNs int64) {
	if n.moves.copies == nil {
		n.moves.copies, n.moves.releases = map[partKey]*moveCopy{}, map[partKey]*release{}
		n.moves.reported = map[partKey]uint32{}
		n.moves.stats.FreezeNs = newHistogram()
	}
	self := n.meta.ID()
	for _, k := range slices.SortedFunc(maps.Keys(n.moves.copies), comparePartKeys) {
		mc := n.moves.copies[k]
		if mc.phase == moveDiscarding {
			continue // its move ended already
		}
		mv, ok := n.meta.MoveOf(k.topicID, k.index)
		// The same move: an abort and a new start applied together leave the epoch and
		// the members alike, and the copy of the one aborted must not go on as the new
		// one's (cluster seed 2986: its freeze, asked and applied before the abort, was
		// never asked again, and the new move stayed copying).
		if ok && mv.To == self && mv.Epoch == mc.epoch && (mv.Started == mc.started || mutMoveInstance) {
			if mv.State == meta.MoveFrozen && mc.frozenNs == 0 {
				mc.frozenNs = nowNs
			}
			continue
		}
		n.endCopy(nowNs, mc)
	}
	// Started after the ends: a copy ended for a new move of its partition (an abort and
	// a new start applied together) gives way to the new one's at once, when no later
	// change of the replica would call this again (cluster seed 122).
	for _, mv := range n.meta.Moves() {
		k := partKey{topicID: mv.TopicID, index: mv.Partition}
		if mv.To == self && n.moves.copies[k] == nil {
			n.startCopy(nowNs, k, mv)
		}
	}
	n.syncReleases(nowNs)
	n.reportCutovers()
}

// reportCutovers tells OnPartitionMoved (the simulators' hook) of every partition this
// node holds by a cutover that this process did not carry out: the process that copied
// it may have ended before its replica applied the cutover, and this one serves the copy
// (cluster seed 410124). The source is not known here: from is 0.
func (n *Node) reportCutovers() {
	if n.cfg.OnPartitionMoved == nil {
		return
	}
	self := n.meta.ID()
	for _, t := range n.meta.Topics() {
		for i, owner := range n.meta.Owners(t.ID) {
			k := partKey{t.ID, uint32(i)}
			epoch := n.meta.PartitionEpoch(t.ID, k.index)
			if owner != self || n.moves.copies[k] != nil || n.moves.reported[k] == epoch ||
				!n.meta.CutOver(t.ID, k.index) {
				continue
			}
			n.moves.reported[k] = epoch
			n.cfg.OnPartitionMoved(t.ID, k.index, 0)
		}
	}
}

func (n *Node) startCopy(nowNs int64, k partKey, mv meta.Move) {
	n.moves.stats.Started++
	mc := &moveCopy{key: k, from: mv.From, epoch: mv.Epoch, started: mv.Started,
		phase: moveWiping, startNs: nowNs, passes: n.reclaim.Stats().Passes}
	n.moves.copies[k] = mc
	if mv.State == meta.MoveFrozen {
		// Frozen before this process began: an earlier one copied the tail and may have
		// asked for the cutover, which may still apply. Its files are kept; the move is
		// aborted (a fence for that cutover), and a new one starts a fresh copy.
		mc.phase = moveAbandoned
		return
	}
	if p := n.parts[k]; p != nil {
		n.dropPartition(k, fmt.Errorf("%w: partition %d moves here anew", ErrNotReady, k.index))
	}
	n.reclaim.Request(nowNs)
}

// endCopy ends a copy whose move is over: served here when its cutover (this process's,
// or an earlier one's for an abandoned copy) gave this node the partition under the next
// epoch; removed before the partition is served when this node got it another way (a
// forget's reassignment: moveDiscarding); else dropped with its files.
func (n *Node) endCopy(nowNs int64, mc *moveCopy) {
	delete(n.moves.copies, mc.key)
	t, ok := n.meta.TopicByID(mc.key.topicID)
	mine := ok && n.ownerOf(t, mc.key.index) == n.meta.ID()
	if mine && n.meta.PartitionEpoch(mc.key.topicID, mc.key.index) == mc.epoch+1 &&
		n.meta.CutOver(mc.key.topicID, mc.key.index) {
		n.moves.stats.Done++
		if mc.frozenNs > 0 {
			n.moves.stats.FreezeNs.Observe(nowNs - mc.frozenNs)
		}
		if n.cfg.OnPartitionMoved != nil {
			n.moves.reported[mc.key] = mc.epoch + 1 // reportCutovers: this one is told
			n.cfg.OnPartitionMoved(mc.key.topicID, mc.key.index, mc.from)
		}
		return
	}
	n.moves.stats.Dropped++
	if n.parts[mc.key] != nil {
		n.dropPartition(mc.key, fmt.Errorf("%w: the move of partition %d ended", ErrNotReady,
			mc.key.index))
	}
	if mine { // its files go before the partition is served (copyBlocks)
		n.discardFiles(nowNs, mc.key)
		return
	}
	n.reclaim.Request(nowNs)
}

// discardFiles removes the files of partition k, which is not open, before this node
// serves it (an empty log): the reclaimer takes them while copyBlocks holds it closed.
func (n *Node) discardFiles(nowNs int64, k partKey) {
	n.moves.copies[k] = &moveCopy{key: k, phase: moveDiscarding, passes: n.reclaim.Stats().Passes}
	n.reclaim.Request(nowNs)
}

// copyBlocks reports whether partition k must not be opened here: its directories are
// being removed, before a copy or before this node serves it (moveDiscarding).
func (n *Node) copyBlocks(k partKey) bool {
	mc := n.moves.copies[k]
	return mc != nil && (mc.phase == moveWiping || mc.phase == moveDiscarding)
}

// copyBase is the first offset of a partition log opened for a move's copy, and
// whether one is.
func (n *Node) copyBase(k partKey) (uint64, bool) {
	if mc := n.moves.copies[k]; mc != nil {
		return mc.base, true
	}
	return 0, false
}

// PartitionWiped reports whether partition index of topicID has its files removed now,
// before a move's copy or before this node serves it empty (for the simulators' reclaim
// check).
func (n *Node) PartitionWiped(topicID uint64, index uint32) bool {
	return n.copyBlocks(partKey{topicID, index})
}

// wipingCopy reports whether k's directories are being removed (copyBlocks).
func (n *Node) wipingCopy(k partKey) bool { return n.copyBlocks(k) }

// advanceMoves moves every copy on as far as it can go now.
func (n *Node) advanceMoves(nowNs int64) {
	for _, k := range slices.SortedFunc(maps.Keys(n.moves.copies), comparePartKeys) {
		if mc := n.moves.copies[k]; mc != nil && mc.inFlight == 0 && nowNs >= mc.afterNs {
			before := n.moves.acts
			n.advanceCopy(nowNs, mc)
			if n.moves.acts == before && mc.inFlight == 0 { // waits for something: look again then
				mc.afterNs = nowNs + MoveRetryNs
				if mc.frozenNs != 0 { // the partition takes nothing meanwhile: soon
					mc.afterNs = nowNs + MoveFrozenRetryNs
				}
			}
		}
	}
	if n.advanceReleases(nowNs) {
		n.moves.acts++
	}
}

func (n *Node) advanceCopy(nowNs int64, mc *moveCopy) {
	t, ok := n.meta.TopicByID(mc.key.topicID)
	if n.IsReady() != nil || !ok && mc.phase != moveDiscarding {
		return
	}
	switch mc.phase {
	case moveWiping, moveDiscarding:
		st := n.reclaim.Stats()
		if _, retry := n.reclaim.NextDeadline(); st.Passes <= mc.passes || n.reclaim.Busy() || retry {
			return
		}
		if mc.phase == moveDiscarding {
			delete(n.moves.copies, mc.key) // removed: the partition opens empty, as its epoch says
			n.moves.acts++
			n.syncMoves(nowNs)
			return
		}
		mc.phase = moveOpening
		n.fetch(nowNs, mc, 0, 0)
	case moveAbandoned:
		n.proposeMove(nowNs, mc, meta.AbortMove, moveAbandoned)
	case moveCopying:
		p := n.partitionFor(nowNs, t, mc.key.index)
		switch {
		case !p.ready() || p.failed != nil || p.inflight != nil:
		case len(mc.runs) > 0:
			n.commitRun(nowNs, mc, p)
		case mc.final != nil && p.log.HighWatermark() == mc.final.HighWatermark:
			n.importAcks(nowNs, mc, p)
		default:
			n.maybeFreeze(nowNs, mc, p)
			n.fetch(nowNs, mc, p.log.HighWatermark(), MoveFetchBytesMax)
		}
	case moveImporting:
		p := n.parts[mc.key]
		switch {
		case (p == nil || p.leases != mc.importedInto) && !mutImportLost:
			// Reopened (a failed ack write poisons it) or dropped: the new lease manager
			// recovered from files the imported acks may never have reached, so the
			// acks are fetched and imported again (cluster seed 378869).
			mc.phase, mc.final, mc.importedInto = moveCopying, nil, nil
			n.moves.acts++
		case p != nil && p.leases.Flushed() && p.leases.Failed() == nil:
			mc.cutover = true
			n.proposeMove(nowNs, mc, meta.CutOverMove, moveCuttingOver)
		}
	}
}

// fetch asks the source for batches from offset from (bytesMax 0: its offsets only).
func (n *Node) fetch(nowNs int64, mc *moveCopy, from uint64, bytesMax uint32) {
	mc.inFlight++
	n.moves.acts++
	n.call(nowNs, mc.from, MoveFetchTimeoutNs,
		func(id uint64) wire.Message {
			return wire.FetchRequest{ID: id, Incarnation: mc.key.topicID, Partition: mc.key.index,
				Epoch: mc.epoch, From: from, BytesMax: bytesMax}
		},
		func(now int64, m wire.Message) { n.onFetched(now, mc, m) })
}

func (n *Node) onFetched(nowNs int64, mc *moveCopy, m wire.Message) {
	mc.inFlight--
	r, ok := m.(wire.FetchResponse)
	if n.moves.copies[mc.key] != mc {
		return // the move ended meanwhile
	}
	if !ok || r.Code != wire.CodeOK {
		if mc.phase == moveOpening {
			mc.phase = moveWiping // asked again; the wipe found done at once
		}
		mc.afterNs = nowNs + MoveRetryNs
		return
	}
	mc.srcHW = r.HighWatermark
	if mc.phase == moveOpening {
		mc.base, mc.phase = r.Oldest, moveCopying
		return
	}
	if n.copyBelowEmptySource(mc, r) && !mutEmptySourceCopy {
		n.restartCopy(nowNs, mc)
		return
	}
	mc.runs = contiguousRuns(r.Batches)
	if r.HasAcks {
		mc.final = &r
	}
	if len(r.Batches) == 0 && !r.HasAcks {
		// Nothing new yet: the source is not frozen yet, or is finishing its last commit.
		// While frozen the partition takes nothing, so the tail is asked for again soon.
		mc.afterNs = nowNs + MoveRetryNs
		if mv, ok := n.meta.MoveOf(mc.key.topicID, mc.key.index); ok && mv.State == meta.MoveFrozen {
			mc.afterNs = nowNs + MoveFrozenRetryNs
		}
	}
}

// copyBelowEmptySource reports whether the source's log holds nothing and starts past the
// copy's end. An empty log's base is not written anywhere: a source that reopens it
// (a restart, a poisoned partition) starts it at its epoch's base, past the oldest
// offset the copy opened at. No batch will ever bring the copy there (cluster seed
// 3806: the move stayed frozen for ever).
func (n *Node) copyBelowEmptySource(mc *moveCopy, r wire.FetchResponse) bool {
	if r.HighWatermark != r.Oldest || mc.inFlight > 0 {
		return false
	}
	end := mc.base
	if p := n.parts[mc.key]; p != nil {
		if !p.ready() {
			return false
		}
		end = p.log.HighWatermark()
	}
	return end < r.Oldest
}

// restartCopy starts a copy again from the wipe: its log then opens at the source's
// oldest offset as it is now.
func (n *Node) restartCopy(nowNs int64, mc *moveCopy) {
	if n.parts[mc.key] != nil {
		n.dropPartition(mc.key, fmt.Errorf("%w: partition %d is copied again", ErrNotReady,
			mc.key.index))
	}
	mc.phase, mc.passes, mc.runs, mc.final = moveWiping, n.reclaim.Stats().Passes, nil, nil
	n.moves.acts++
	n.reclaim.Request(nowNs)
}

// contiguousRuns splits fetched batches into runs CommitCopy takes: no gap inside one.
func contiguousRuns(batches []wire.FetchBatch) [][]plog.CopyBatch {
	var runs [][]plog.CopyBatch
	var next uint64
	for i, b := range batches {
		cb := plog.CopyBatch{Base: b.Base, CommitMs: b.CommitMs, Entries: make([]plog.Entry,
			len(b.Records))}
		for j, r := range b.Records {
			cb.Entries[j] = plog.Entry{Key: r.Key, HasKey: r.HasKey, Payload: r.Payload}
		}
		if i == 0 || b.Base != next {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], cb)
		next = b.Base + uint64(len(b.Records))
	}
	return runs
}

// commitRun writes the next run of fetched batches with commitDurable, in the
// partition's one commit slot (nothing else commits to a partition this node does not
// own).
func (n *Node) commitRun(nowNs int64, mc *moveCopy, p *partition) {
	run := mc.runs[0]
	if run[0].Base < p.log.HighWatermark() { // a fetch answered twice, or overtaken: skip
		mc.runs = mc.runs[1:]
		n.moves.acts++
		return
	}
	mc.inFlight++
	n.moves.acts++
	id := n.inflight.add(entry{purpose: forCommit, part: p.key})
	p.inflight, p.commitTok, p.commitAt = []commitJob{{copy: true, done: func(now int64, err error) {
		mc.inFlight--
		if err != nil {
			mc.afterNs = now + MoveRetryNs // cut back and retried, or the partition failed
			return
		}
		for _, b := range run {
			for _, e := range b.Entries {
				mc.bytesMoved += uint64(len(e.Key) + len(e.Payload))
				n.moves.stats.BytesCopied += uint64(len(e.Key) + len(e.Payload))
			}
		}
		mc.runs = mc.runs[1:]
	}}}, id, nowNs
	p.log.CommitCopy(nowNs, id, run)
}

// maybeFreeze asks for the freeze once the copy is close to the source, or has copied
// for MovePrecopyNsMax.
func (n *Node) maybeFreeze(nowNs int64, mc *moveCopy, p *partition) {
	mv, ok := n.meta.MoveOf(mc.key.topicID, mc.key.index)
	if ok && mv.State == meta.MoveFrozen && mutCutOverUnverified {
		mc.cutover, mc.phase = true, moveImporting // the planted bug: no tail, no acks
		n.moves.acts++
		return
	}
	if !ok || mv.State != meta.MoveCopying || mc.proposed {
		return
	}
	lag := mc.srcHW - min(mc.srcHW, p.log.HighWatermark())
	if lag <= MoveFreezeLagRecordsMax || nowNs-mc.startNs >= MovePrecopyNsMax {
		mc.proposed = true
		n.proposeMove(nowNs, mc, meta.FreezeMove, moveCopying)
	}
}

// importAcks takes the frozen source's ack state into the copy's lease manager.
func (n *Node) importAcks(nowNs int64, mc *moveCopy, p *partition) {
	if err := p.leases.ImportAcks(nowNs, mc.final.AckFloor, mc.final.Acked); err != nil {
		mc.final, mc.afterNs = nil, nowNs+MoveRetryNs // fetched again
		return
	}
	mc.phase, mc.importedInto = moveImporting, p.leases
	n.moves.acts++
}

// proposeMove proposes kind for the copy's move; then is the phase while it is in
// flight. A refusal (the move changed meanwhile) or no answer sets the copy back to
// copying, after MoveRetryNs; an applied one is seen by syncMoves.
func (n *Node) proposeMove(nowNs int64, mc *moveCopy, kind meta.CommandKind, then movePhase) {
	mc.inFlight, mc.phase = mc.inFlight+1, then
	n.moves.acts++
	tok := n.internal(func(now int64, r Response) {
		mc.inFlight--
		if r.Err != nil && then == moveAbandoned {
			mc.afterNs = now + MoveRetryNs // the abort is asked again while the move lasts
		} else if r.Err != nil {
			mc.phase, mc.proposed, mc.afterNs = moveCopying, false, now+MoveRetryNs
			if kind == meta.CutOverMove {
				mc.final = nil // the tail and the acks are fetched again
			}
		}
	})
	cmd := meta.Command{Kind: kind, TopicID: mc.key.topicID, Part: mc.key.index, Epoch: mc.epoch}
	if kind == meta.AbortMove {
		cmd.Epoch = 0 // an abort names no epoch
	}
	n.propose(nowNs, tok, cmd)
}

// moveDeadline is the earliest time a copy waits for.
func (n *Node) moveDeadline() (int64, bool) {
	var at int64
	for _, mc := range n.moves.copies { //narad:unordered (a minimum)
		if mc.inFlight == 0 && mc.afterNs > 0 && (at == 0 || mc.afterNs < at) {
			at = mc.afterNs
		}
	}
	for _, r := range n.moves.releases { //narad:unordered (a minimum)
		if !r.busy && (at == 0 || r.afterNs < at) {
			at = r.afterNs
		}
	}
	return at, at != 0
}
