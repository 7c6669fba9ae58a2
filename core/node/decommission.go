package node

import (
	"fmt"

	"github.com/narad/narad/core/meta"
)

// Decommissioning a member (POST and DELETE /v1/cluster/members/{id}/decommission):
// core/meta decommission.go decides; this node proposes the start or the cancel, or
// answers a dry run's verdict. A draining node refuses produces (503: produce through
// another member), and once it owns no partition and every record its WAL accepted is
// committed at its owner (the dispatcher holds none, no produce is in progress) it
// proposes its own removal (proposeOwnRemoval): what it answered 202 is never left
// behind in a WAL that stops. A removed node stops (stopIfForgotten), after handing on
// the metastore's leadership if it holds it.

// DecommissionReport is a decommission's answer: the member, the partitions it owns
// (that a drain moves), and on a dry run the refusal it would get ("" if none).
type DecommissionReport struct {
	Member     uint64
	DryRun     bool
	Partitions int
	Refusal    string
}

// DecommissionMember starts draining member id, or with dryRun answers whether it would.
// Refusals: ErrMemberNotFound, ErrRefused (a forgotten id, a guard: the message says).
func (n *Node) DecommissionMember(nowNs int64, token uint64, id uint64, dryRun bool) {
	defer n.collect(nowNs)
	n.checkToken(token)
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	rep := &DecommissionReport{Member: id, DryRun: dryRun, Partitions: n.meta.OwnedBy(id)}
	if dryRun {
		err := n.meta.DecommissionPlan(id)
		if err != nil && !isRefusal(err) {
			n.respond(Response{Token: token, Err: metaError(err)})
			return
		}
		if err != nil {
			rep.Refusal = err.Error()
		}
		n.respond(Response{Token: token, Decommission: rep})
		return
	}
	tok := n.internal(func(_ int64, r Response) {
		if r.Err != nil {
			n.respond(Response{Token: token, Err: r.Err})
			return
		}
		n.respond(Response{Token: token, Decommission: rep})
	})
	n.propose(nowNs, tok, meta.Command{Kind: meta.DecommissionMember, Member: id})
}

// CancelDecommission stops member id's drain. Refusals: ErrMemberNotFound, ErrRefused
// (not draining).
func (n *Node) CancelDecommission(nowNs int64, token uint64, id uint64) {
	n.propose(nowNs, token, meta.Command{Kind: meta.CancelDecommission, Member: id})
}

// MemberRemoved reports whether this node's replica holds id removed by a decommission
// (for the simulators).
func (n *Node) MemberRemoved(id uint64) bool { return n.meta.IsRemoved(id) }

// failRemoved: this node was decommissioned and removed; it stops. Nothing was given up.
func (n *Node) failRemoved(how string) {
	n.fail(fmt.Errorf("%w: member %d was decommissioned and removed (%s): its directory can "+
		"be deleted; to serve again, join under a new id on an empty directory",
		meta.ErrRemoved, n.meta.ID(), how))
}

// IsMember reports whether id is a member on this node's replica (for the simulators).
func (n *Node) IsMember(id uint64) bool { return n.meta.IsMember(id) }

// RemovalRetryNs: how long a node waits before it proposes its own removal again after
// a refusal or no answer (a guard that holds for now, a leader change).
const RemovalRetryNs = 1_000_000_000

// removalState is this member's own removal: a proposal in flight, or the earliest time
// of the next one.
type removalState struct {
	pending bool
	afterNs int64
}

// refuseDraining answers a produce ErrNotReady while this member drains, and once it is
// removed (a leader runs on until it handed its leadership on: cluster seed 2669 took
// produces then, and stopped with them in its WAL).
func (n *Node) refuseDraining(token uint64) bool {
	if id := n.meta.ID(); !n.meta.IsDraining(id) && (!n.meta.IsForgotten(id) || mutRemovedTakes) {
		return false
	}
	n.respond(Response{Token: token, Err: fmt.Errorf("%w: member %d is being decommissioned: "+
		"produce through another member", ErrNotReady, n.meta.ID())})
	return true
}

// proposeOwnRemoval proposes this member's removal once it drains, owns no partition,
// and holds nothing its dispatcher has not committed (every record answered 202 here is
// at its owner).
func (n *Node) proposeOwnRemoval(nowNs int64) {
	id := n.meta.ID()
	if !n.meta.IsDraining(id) || n.removal.pending || nowNs < n.removal.afterNs ||
		n.IsReady() != nil || n.meta.OwnedBy(id) > 0 { // (every Tick: the cheap test first)
		return
	}
	if held, _ := n.disp.Backlog(); (held > 0 || len(n.produces) > 0 || n.syncInFlight > 0) &&
		!mutRemoveEarly {
		return
	}
	n.removal.pending = true
	tok := n.internal(func(now int64, r Response) {
		n.removal = removalState{afterNs: now + RemovalRetryNs} // applied: the node stops
	})
	n.propose(nowNs, tok, meta.Command{Kind: meta.RemoveMember, Member: id})
}

// MemberDraining reports whether id is being decommissioned on this node's replica (for
// the simulators).
func (n *Node) MemberDraining(id uint64) bool { return n.meta.IsDraining(id) }

// InConf reports whether id is a voter or learner of this node's replica's applied raft
// configuration (for the simulators).
func (n *Node) InConf(id uint64) bool { return n.meta.InConf(id) }

// OwnedBy counts the partitions member id owns on this node's replica (for the
// simulators).
func (n *Node) OwnedBy(id uint64) int { return n.meta.OwnedBy(id) }
