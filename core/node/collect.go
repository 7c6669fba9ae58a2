package node

import (
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/dispatch"
)

// collectRoundsMax bounds the rounds of one collect: each round drains every machine's
// Ready and feeds the outputs to the others. Reaching it means machines feed each other
// forever: a bug.
const collectRoundsMax = 1000

// collect drains every machine's output and routes it, until nothing moves.
func (n *Node) collect(nowNs int64) {
	for round := 0; ; round++ {
		if round == collectRoundsMax {
			assert.Fail("node: machines keep feeding each other")
		}
		moved := n.collectWAL(nowNs)
		moved = n.collectMeta(nowNs) || moved
		for _, pk := range n.partKeys {
			moved = n.collectPartition(nowNs, pk) || moved
		}
		moved = n.collectDispatch(nowNs) || moved
		moved = n.collectReclaim() || moved
		moved = n.collectMoves(nowNs) || moved
		moved = n.runInternal(nowNs) || moved
		if !moved {
			return
		}
	}
}

func (n *Node) collectWAL(nowNs int64) bool {
	rd := n.wal.Ready()
	n.issue(compWAL, partKey{}, rd.Ops)
	for _, d := range rd.Done {
		n.onAppendDone(nowNs, d)
	}
	if rd.Recovered != nil {
		n.walRecovery, n.walReady = rd.Recovered, true
		n.maybeStart(nowNs)
	}
	if rd.Failed != nil {
		n.fail(fmt.Errorf("%w: %w", ErrWALFailed, rd.Failed))
	}
	return len(rd.Ops) > 0 || len(rd.Done) > 0 || rd.Recovered != nil || rd.Failed != nil
}

func (n *Node) collectMeta(nowNs int64) bool {
	rd := n.meta.Ready()
	n.issue(compMeta, partKey{}, rd.Ops)
	n.sendRaft(nowNs, rd.Messages)
	for _, d := range rd.Done {
		n.onProposeDone(nowNs, d)
	}
	for _, b := range rd.Barriers {
		switch n.inflight.purposeOf(b.Token) {
		case forCatchUp:
			n.inflight.take(b.Token, forCatchUp)
			n.onCatchUpBarrier(nowNs, b.Err)
		case forForwardBarrier:
			n.onForwardBarrier(b.Token, b.Err)
		case forDispatchBarrier:
			e, _ := n.inflight.take(b.Token, forDispatchBarrier)
			n.disp.BarrierDone(nowNs, e.dispTok, b.Err)
		default:
			assert.That(false, "node: a metastore barrier answer for no barrier in flight")
		}
	}
	if n.metaReady && n.meta.AppliedIndex() != n.seenApplied {
		n.seenApplied = n.meta.AppliedIndex()
		n.syncTopics()
		n.syncMoves(nowNs)
		n.bootstrapRoot(nowNs)
		n.stopIfForgotten()
	}
	if rd.Recovered != nil {
		n.metaReady = true
		n.nextHeartbeatNs = max(nowNs, 1) // the first heartbeat goes out at once (a Hello too)
		n.maybeStart(nowNs)
	}
	n.catchUp(nowNs)
	n.noteDeletes(nowNs)
	if rd.Failed != nil {
		n.fail(fmt.Errorf("%w: %w", ErrMetastoreFailed, rd.Failed))
	}
	return len(rd.Ops) > 0 || len(rd.Done) > 0 || len(rd.Barriers) > 0 || rd.Recovered != nil ||
		rd.Failed != nil
}

// maybeStart builds the dispatcher once both the WAL and the metastore are recovered,
// and hands it every record the WAL replayed.
func (n *Node) maybeStart(nowNs int64) {
	if !n.walReady || !n.metaReady || n.disp != nil {
		return
	}
	n.disp = dispatch.New(n.cfg.Dispatch, catalog{n.meta}, n.walRecovery.Checkpoint)
	n.disp.Restore(n.walRecovery.Skip)
	for _, r := range n.walRecovery.Records {
		n.disp.Add(nowNs, r)
	}
	n.walRecovery = nil
}

func (n *Node) collectDispatch(nowNs int64) bool {
	if n.disp == nil {
		return false
	}
	n.disp.Pump(nowNs)
	rd := n.disp.Ready()
	for _, c := range rd.Commits {
		n.routeCommit(nowNs, c)
	}
	for _, tok := range rd.Barriers {
		n.meta.Barrier(nowNs, n.inflight.add(entry{purpose: forDispatchBarrier, dispTok: tok}))
	}
	if rd.Checkpoint != 0 {
		n.wal.SetCheckpoint(nowNs, rd.Checkpoint)
	}
	if rd.Skip != nil {
		n.wal.SetSkip(nowNs, *rd.Skip)
	}
	return len(rd.Commits) > 0 || len(rd.Barriers) > 0 || rd.Checkpoint != 0 || rd.Skip != nil
}
