package node

import "fmt"

// A node is ready (API.md /readyz) once its logs are recovered and its metastore replica
// has applied every entry the leader had committed when the replica first asked. A
// restarted follower's own commit index is whatever it last heard, so it cannot tell by
// itself: once the replica is recovered and knows a leader, the node asks it for a
// barrier (a raft ReadIndex, which the leader answers with its commit index and the
// replica completes once applied up to there). The barrier's success makes the node
// caught up for good; a failed barrier (no leader, a timeout, a lost leadership) is
// asked again after CatchUpRetryNs.

// CatchUpRetryNs is the wait before a failed catch-up barrier is asked again.
const CatchUpRetryNs = 500_000_000

// barrierOfStart is the metastore barrier token of the catch-up (the dispatcher's tokens
// are small counters, the forwards' carry barrierOfForward).
const barrierOfStart = 1 << 62

// catchUp asks for the catch-up barrier when it is due.
func (n *Node) catchUp(nowNs int64) {
	if n.caughtUp || n.catchUpAsked || nowNs < n.catchUpRetryNs {
		return
	}
	n.catchUpRetryNs = 0 // due: no deadline is left behind while no leader is known
	if !n.metaReady || n.meta.LeaderID() == 0 {
		return // asked on a later collect, once a leader is known
	}
	n.catchUpAsked = true
	n.meta.Barrier(nowNs, barrierOfStart) // the metastore answers every barrier, in time or not
}

// onCatchUpBarrier records the answer to the catch-up barrier.
func (n *Node) onCatchUpBarrier(nowNs int64, err error) {
	n.catchUpAsked = false
	if err != nil {
		n.catchUpRetryNs = nowNs + CatchUpRetryNs
		return
	}
	n.caughtUp = true
}

// catchUpDeadline is when a failed catch-up barrier is asked again.
func (n *Node) catchUpDeadline() (int64, bool) {
	if n.caughtUp || n.catchUpAsked || n.catchUpRetryNs == 0 {
		return 0, false
	}
	return n.catchUpRetryNs, true
}

// Readiness is nil when the node is ready in the sense of /readyz: it serves requests
// (IsReady) and its metastore replica has caught up with the leader since the start.
func (n *Node) Readiness() error {
	if err := n.IsReady(); err != nil {
		return err
	}
	if !n.caughtUp && !(mutReadyEarly && n.meta.CaughtUp()) {
		return fmt.Errorf("%w: the metastore replica is catching up with the leader", ErrNotReady)
	}
	return nil
}

// MetastoreApplied is the raft index the local metastore replica has applied.
func (n *Node) MetastoreApplied() uint64 { return n.meta.AppliedIndex() }
