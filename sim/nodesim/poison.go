package nodesim

import (
	"fmt"

	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// A failed partition stays local (issue 13, point 4). The disk fails syncs, writes and
// reads (Options.Disk); the node poisons the partition whose op failed and reopens it
// later (core/node poison.go). Checked (check name "poison", with invariants.Poison):
// the node never fails for one partition's failure; a reopen follows a failed op on that
// partition's files since its last reopen or the process start; a redelivery is
// explained by a reopen with the record leased (the leases are gone with the old
// machines) or an ack lost with the partition.

func (pr partRef) ref() invariants.PartRef {
	return invariants.PartRef{TopicID: pr.topicID, Index: pr.index}
}

// onReopen holds the node's reopen of a partition to a failed op (OnPartitionReopen).
func (u *run) onReopen(topicID uint64, index uint32) {
	u.stats.PartitionReopens++
	if err := u.poison.Reopened(u.s.Now(), invariants.PartRef{TopicID: topicID, Index: index}); err != nil {
		u.violate(err)
	}
}

// ackLostWithPartition reports whether an ack of pr answered OK at settledNs may have
// been lost with the failed partition: a reopen before it was flushed, or ack files that
// had failed (the ack lived in memory) and a crash or reopen since.
func (u *run) ackLostWithPartition(pr partRef, settledNs int64, crashed, reopened bool) bool {
	if u.poison.AckLostAtReopen(pr.ref(), settledNs, u.ackWindowNs()) {
		return true
	}
	return (crashed || reopened) && u.poison.AckNotPersisted(pr.ref(), settledNs, u.ackWindowNs())
}

// rerouteAfterFailureNs bounds how long after a failed op on a partition's files the
// node may still reroute its records: the longest wait for its reopen, then the hold of
// the dispatcher's last "partition failed" answer.
const rerouteAfterFailureNs = node.PartitionReopenMaxNs + dispatch.PartitionFailedHoldNs

// onReroute notes a reroute by the dispatcher (dispatch.Config.OnReroute): a single
// node's owner is never dead, so only a partition that failed may lose its records to a
// sibling (check "poison").
func (u *run) onReroute(k dispatch.Key, to uint32, _ int) {
	from := partRef{topicID: k.Incarnation, index: k.Partition}
	now := u.s.Now()
	if !u.poison.FailedWithin(from.ref(), now-rerouteAfterFailureNs, now) {
		u.violate(fmt.Errorf("poison: the dispatcher rerouted records of %s to partition %d with no failed op on its files within %d s", partName(from), to, rerouteAfterFailureNs/1_000_000_000))
	}
	u.moves.Add(from.ref(), to, now)
}

// movedTo reports whether records of partition from of incarnation topicID may have
// been rerouted, in one or more moves since sinceNs, to partition to.
func (u *run) movedTo(topicID uint64, from, to uint32, sinceNs int64) bool {
	return u.moves.LeadTo(topicID, from, to, sinceNs)
}

// awaitReopened runs the healed node until no partition of it is failed, for at most
// invariants.ReopenBoundNs: a failed partition is reopened with a bounded retry.
func (u *run) awaitReopened() {
	if u.err != nil {
		return
	}
	failed := func() ([]string, bool) {
		if !u.up {
			return nil, false
		}
		return u.n.FailedPartitions(), true
	}
	if err := invariants.AwaitReopened(u.s.Now, u.healStep, failed); err != nil {
		u.violate(err)
	}
}
