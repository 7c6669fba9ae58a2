package node

import (
	"fmt"

	"github.com/narad/narad/core/meta"
)

// Decommissioning a member (POST and DELETE /v1/cluster/members/{id}/decommission):
// core/meta decommission.go decides and its controller removes the member once drained;
// this node proposes the start or the cancel, or answers a dry run's verdict. A removed
// node stops (stopIfForgotten), after handing on the metastore's leadership if it holds
// it.

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
