package node

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/wire"
)

// Forgetting a member (POST /v1/cluster/members/{id}/forget): the explicit way to give
// up a dead node that will not return. core/meta forget.go decides; this node answers
// the plan (a dry run) or proposes the forget and answers what it gave up once its own
// replica applied it.

// ForgetReport is what a forget gives up, or would on a dry run: each partition the
// member owned and the member it goes to, empty (its records were only there).
type ForgetReport struct {
	Member     uint64
	DryRun     bool
	Partitions []ForgetPartition
}

// ForgetPartition is one partition a forget reassigns, under a new epoch whose offsets
// start at FirstOffset (meta.EpochBase): no offset of the records given up is reused.
// Marked: the member's last mark of it is known (marks.go), and HighWatermark and
// Oldest are that mark's: the records from Oldest to HighWatermark are given up (at
// most Lost(); a hole or records written after the last contact make it fewer or more).
type ForgetPartition struct {
	TopicID       uint64 // the topic's incarnation
	Topic         string
	Partition     uint32
	From, To      uint64
	Epoch         uint32
	FirstOffset   uint64
	Marked        bool
	HighWatermark uint64
	Oldest        uint64
}

// Lost is the number of records the last mark held: HighWatermark - Oldest.
func (p ForgetPartition) Lost() uint64 { return p.HighWatermark - p.Oldest }

// ForgetMember forgets member id, or with dryRun answers what it would do. Refusals:
// ErrMemberNotFound, ErrRefused (alive, forgotten already, a guard: the message says).
func (n *Node) ForgetMember(nowNs int64, token uint64, id uint64, dryRun bool) {
	defer n.collect(nowNs)
	n.checkToken(token)
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	plan, err := n.meta.ForgetPlan(id)
	if err != nil {
		n.respond(Response{Token: token, Err: metaError(err)})
		return
	}
	marks := n.lastMarks(id, plan) // before the forget's epochs make them stale
	if dryRun {
		n.respond(Response{Token: token, Forget: n.forgetReport(id, true, plan, marks)})
		return
	}
	tok := n.internal(func(_ int64, r Response) {
		if r.Err != nil {
			n.respond(Response{Token: token, Err: r.Err})
			return
		}
		n.respond(Response{Token: token, Forget: n.forgetReport(id, false, plan, marks)})
	})
	n.propose(nowNs, tok, meta.Command{Kind: meta.ForgetMember, Member: id})
}

// forgetReport lists plan's partitions; once the forget is applied here, each one's new
// owner and epoch are read from the replica (the leader's live members may have
// differed). A topic created or deleted between the plan and the apply is not reflected.
func (n *Node) forgetReport(id uint64, dryRun bool, plan []meta.Reassignment,
	marks map[partKey]wire.Mark) *ForgetReport {
	r := &ForgetReport{Member: id, DryRun: dryRun}
	for _, p := range plan {
		to := p.To
		if owners := n.meta.Owners(p.TopicID); !dryRun && int(p.Partition) < len(owners) {
			to, p.Epoch = owners[p.Partition], n.meta.PartitionEpoch(p.TopicID, p.Partition)
		}
		fp := ForgetPartition{TopicID: p.TopicID, Topic: p.Topic, Partition: p.Partition,
			From: p.From, To: to, Epoch: p.Epoch, FirstOffset: meta.EpochBase(p.Epoch)}
		if k, ok := marks[partKey{p.TopicID, p.Partition}]; ok {
			fp.Marked, fp.HighWatermark, fp.Oldest = true, k.HW, k.Oldest
		}
		r.Partitions = append(r.Partitions, fp)
	}
	return r
}

// MemberForgotten reports whether this node's replica holds id forgotten (for the
// simulators).
func (n *Node) MemberForgotten(id uint64) bool { return n.meta.IsForgotten(id) }

// PartitionEpoch is the epoch of partition index of incarnation topicID on this node's
// replica (for the simulators).
func (n *Node) PartitionEpoch(topicID uint64, index uint32) uint32 {
	return n.meta.PartitionEpoch(topicID, index)
}

// isRefusal reports whether err is a membership refusal of core/meta.
func isRefusal(err error) bool {
	return errors.Is(err, meta.ErrGuard) || errors.Is(err, meta.ErrMemberAlive) ||
		errors.Is(err, meta.ErrForgotten) || errors.Is(err, meta.ErrNotDraining)
}

// onForgotten: a member says the cluster forgot this node (it heard this node's
// heartbeat after the forget). The node stops: its partitions are others' now, and its
// old copies must never be served. The way back is a new id on an empty directory.
func (n *Node) onForgotten(from uint64, m wire.Forgotten) {
	if m.Member != n.meta.ID() || !n.meta.IsMember(from) || n.meta.Leader() {
		return // a leader hands its leadership on first (stopIfForgotten)
	}
	if m.Removed {
		n.failRemoved(fmt.Sprintf("member %d says so", from))
		return
	}
	n.failForgotten(fmt.Sprintf("member %d says so", from))
}

// stopIfForgotten: this node's own replica applied its forget (it was marked dead while
// it ran, behind a one-way cut, say) or its removal (decommission.go): it stops at once,
// unless it leads the metastore: the controller hands the leadership on first (core/meta
// transferAway), and the node stops once a follower.
func (n *Node) stopIfForgotten() {
	switch id := n.meta.ID(); {
	case !n.meta.IsForgotten(id) || mutNoOwnStop || n.meta.Leader():
	case n.meta.IsRemoved(id):
		n.failRemoved("its own replica applied the removal")
	default:
		n.failForgotten("its own replica applied the forget")
	}
}

func (n *Node) failForgotten(how string) {
	n.fail(fmt.Errorf("%w: %w: member %d was forgotten (%s); its partitions went to other "+
		"members: wipe its directory and join under a new id",
		ErrMetastoreFailed, meta.ErrForgotten, n.meta.ID(), how))
}
