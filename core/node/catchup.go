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

// catchUp asks for the catch-up barrier when it is due.
func (n *Node) catchUp(nowNs int64) {
	if n.catchup.done || n.catchup.asked || nowNs < n.catchup.retryNs {
		return
	}
	n.catchup.retryNs = 0 // due: no deadline is left behind while no leader is known
	if !n.metaReady || n.meta.LeaderID() == 0 {
		return // asked on a later collect, once a leader is known
	}
	n.catchup.asked = true
	n.meta.Barrier(nowNs, n.inflight.add(entry{purpose: forCatchUp})) // answered in time or not
}

// onCatchUpBarrier records the answer to the catch-up barrier.
func (n *Node) onCatchUpBarrier(nowNs int64, err error) {
	n.catchup.asked = false
	if err != nil {
		n.catchup.retryNs = nowNs + CatchUpRetryNs
		return
	}
	n.catchup.done = true
}

// catchUpDeadline is when a failed catch-up barrier is asked again.
func (n *Node) catchUpDeadline() (int64, bool) {
	if n.catchup.done || n.catchup.asked || n.catchup.retryNs == 0 {
		return 0, false
	}
	return n.catchup.retryNs, true
}

// Readiness is nil when the node is ready in the sense of /readyz: it serves requests
// (IsReady) and its metastore replica has caught up with the leader since the start.
func (n *Node) Readiness() error {
	if err := n.IsReady(); err != nil {
		return err
	}
	if !n.catchup.done && !(mutReadyEarly && n.meta.CaughtUp()) {
		return fmt.Errorf("%w: the metastore replica is catching up with the leader", ErrNotReady)
	}
	return nil
}

// MetastoreApplied is the raft index the local metastore replica has applied.
func (n *Node) MetastoreApplied() uint64 { return n.meta.AppliedIndex() }

// catchUpState is the catch-up barrier's progress.
type catchUpState struct {
	done    bool  // the replica caught up once: for good
	asked   bool  // a barrier is in flight
	retryNs int64 // when a failed barrier is asked again (0: not due)
}
