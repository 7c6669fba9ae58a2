package clustersim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// Decommission seeds (Options.Spare): one more node, the spare, starts only once the
// main topic exists, so it owns none of its partitions. It joins while faults go on (a
// learner, maybe promoted), takes produces, and DecommissionAfterNs after its start a
// client decommissions it through a node drawn at random, again after each refusal (a
// churn topic placed on it meanwhile, a guard, no leader) until some replica shows it
// draining or removed; in some of these seeds (CancelOnce) a client then cancels it once,
// and it is decommissioned again if the cancel took. The spare then refuses produces, commits what its WAL accepted at
// the owners, proposes its own removal and stops with meta.ErrRemoved; it never starts
// again. Nothing is given up: invariants 2 and 11 still owe every message it answered
// 202. The check `decommission`: once a decommission took (answered, or seen on a
// replica), within DecommissionBoundNs after the heal every up replica holds the spare
// removed and outside its raft configuration, and its process stopped with ErrRemoved;
// and until then, every replica that holds it draining holds it owning no partition.

// decommissionPollNs: how often a decommission seed looks at the spare.
const decommissionPollNs = 300_000_000

// DecommissionBoundNs bounds the wait after the heal for the spare's removal: it
// delivers its WAL (invariant 11's chain) and proposes its removal (a retry every
// node.RemovalRetryNs), then the leader takes it out of the configuration.
const DecommissionBoundNs = 20_000_000_000

// decommissionState is a decommission seed's progress.
type decommissionState struct {
	started     bool // the spare was started
	pending     bool // a decommission request waits for its answer
	took        bool // answered OK, or seen draining or removed on a replica
	cancelAsked bool // the one cancel (Options.CancelOnce) was asked
	cancelled   bool // (set when asked: its outcome may stay unknown)
	removed     bool // the spare's process stopped with meta.ErrRemoved
	refusals    uint64
}

// spare is the spare's index, or -1 without one.
func (u *run) spare() int {
	if !u.o.Spare {
		return -1
	}
	return len(u.members) - 1
}

// isGoneNode reports whether node i is never to start again: forgotten (forget.go) or
// removed by its decommission.
func (u *run) isGoneNode(i int) bool {
	return u.isForgottenNode(i) || (i == u.spare() && u.decom.removed)
}

// decommissionStep starts the spare once the main topic exists, then, after
// DecommissionAfterNs, asks for its decommission until one takes.
func (u *run) decommissionStep() {
	i := u.spare()
	switch {
	case u.decom.removed || u.healing:
		return
	case u.decom.took:
		u.checkDraining(u.members[i].id)
	case !u.decom.started && u.topicID == 0:
	case !u.decom.started:
		u.decom.started = true
		u.start(i)
		u.s.At(u.s.Now()+u.o.DecommissionAfterNs, event{kind: evDecommission})
		return
	default:
		u.askDecommission(u.members[i].id)
	}
	u.s.At(u.s.Now()+decommissionPollNs, event{kind: evDecommission})
}

// checkDraining: a replica that holds the spare draining never holds it owning more
// partitions than at its last look while draining: a draining member takes none (no new
// topic, no move to it); its own partitions move away (core/meta rebalance_control.go).
func (u *run) checkDraining(id uint64) {
	for _, mb := range u.members {
		if !mb.up || !mb.n.MemberDraining(id) {
			mb.drainOwned = -1
			continue
		}
		n := mb.n.OwnedBy(id)
		if mb.drainOwned >= 0 && n > mb.drainOwned {
			u.violate(fmt.Errorf("decommission: replica %d holds node %d draining and owning %d partitions, "+
				"%d at its last look", mb.id, id, n, mb.drainOwned))
		}
		mb.drainOwned = n
		u.stats.DrainChecks++
	}
}

// askDecommission proposes the spare's decommission through an up node, unless a replica
// already shows it draining or removed.
func (u *run) askDecommission(id uint64) {
	via, ok := u.upNode()
	if !ok || u.decom.pending {
		return
	}
	if n := u.members[via].n; u.seenTaken(n, id) {
		u.decom.took = true
		return
	}
	u.decom.pending = true
	u.stats.DecommissionsProposed++
	u.submitReq(via, request{kind: reqDecommission, client: -1},
		func(n *node.Node, now int64, tok uint64) { n.DecommissionMember(now, tok, id, false) })
}

// askCancel asks once, through an up node, as soon as a decommission was answered, to
// cancel the spare's decommission: applied
// before the spare's own removal, the drain ends and the spare is decommissioned again
// (the next polls); after it, the cancel is refused (no such member).
func (u *run) askCancel() {
	via, ok := u.upNode()
	if !ok || u.decom.pending || u.decom.cancelAsked || u.healing {
		return
	}
	id := u.members[u.spare()].id
	// Its outcome may stay unknown (a timeout, a crash): from now on only an answer, or the
	// removal, says a decommission took.
	u.decom.pending, u.decom.cancelAsked, u.decom.cancelled, u.decom.took = true, true, true, false
	u.submitReq(via, request{kind: reqCancelDecommission, client: -1},
		func(n *node.Node, now int64, tok uint64) { n.CancelDecommission(now, tok, id) })
}

// onCancelAnswer counts a cancel that took; the next polls decommission the spare again
// whatever the answer (a refused cancel makes that a no-op).
func (u *run) onCancelAnswer(resp node.Response) {
	u.decom.pending = false
	if resp.Err == nil {
		u.stats.Cancels++
	}
}

// seenTaken reports whether replica n shows the spare's decommission taken: removed, or
// draining (but once a cancel was asked, a lagging replica may show the drain it ended:
// then only an answer says so, or the removal; seeds 110, 606).
func (u *run) seenTaken(n *node.Node, id uint64) bool {
	return n.MemberRemoved(id) || n.MemberDraining(id) && !u.decom.cancelled
}

// onDecommissionAnswer takes the answer: taken, or refused (asked again at the next poll).
func (u *run) onDecommissionAnswer(resp node.Response) {
	u.decom.pending = false
	if resp.Err == nil {
		u.decom.took = true
		if u.o.CancelOnce && !u.decom.cancelAsked { // at once: racing the spare's removal
			u.s.At(u.s.Now()+1, event{kind: evCancel})
		}
		return
	}
	u.decom.refusals++
}

// onNodeStopped notes a node's stop: the spare's removal ends it for good.
func (u *run) onNodeStopped(i int, err error) {
	if !errors.Is(err, meta.ErrRemoved) {
		return
	}
	if i != u.spare() {
		u.violate(fmt.Errorf("decommission: node %d stopped as removed, though no one decommissioned it: %v",
			u.members[i].id, err))
		return
	}
	u.decom.removed = true
	u.stats.Removed++
}

// awaitDecommissioned is the check `decommission` (see above).
func (u *run) awaitDecommissioned() {
	i := u.spare()
	if u.err != nil || i < 0 {
		return
	}
	id := u.members[i].id
	for _, mb := range u.members {
		if mb.up && u.seenTaken(mb.n, id) {
			u.decom.took = true
		}
	}
	if !u.decom.took {
		return
	}
	left := func() ([]string, bool) {
		var out []string
		if !u.decom.removed {
			out = append(out, fmt.Sprintf("n%d still runs", id))
		}
		for _, mb := range u.members {
			if mb.up && (!mb.n.MemberRemoved(id) || mb.n.InConf(id)) {
				out = append(out, fmt.Sprintf("n%d: removed=%v in_conf=%v", mb.id, mb.n.MemberRemoved(id),
					mb.n.InConf(id)))
			}
		}
		return out, true
	}
	if rest := invariants.AwaitNone(u.s.Now, u.healStep, left, DecommissionBoundNs); len(rest) > 0 {
		u.violate(fmt.Errorf("decommission: %d s after the heal the decommissioned node %d is not removed: %v",
			DecommissionBoundNs/1_000_000_000, id, rest))
		return
	}
	u.stats.DecommissionChecks++
}

// goneIDs lists the ids of the members that left for good (forgotten, removed).
func (u *run) goneIDs() []uint64 {
	var out []uint64
	for i, mb := range u.members {
		if u.isGoneNode(i) {
			out = append(out, mb.id)
		}
	}
	return slices.Clip(out)
}
