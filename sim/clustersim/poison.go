package clustersim

import (
	"fmt"

	"github.com/narad/narad/invariants"
)

// A failed partition stays local (issue 13, point 4). The disks fail syncs, writes and
// reads (Options.Disk); a node poisons the partition whose op failed and reopens it later
// (core/node poison.go). Checked (check name "poison", with invariants.Poison):
//   - a node never fails for one partition's failure;
//   - a reopen follows a failed op on that partition's files on that node's disk since
//     its last reopen or the process start;
//   - a redelivery is explained by a reopen of its partition at its owner (the leases
//     are gone with the old machines) and an ack lost by one (not yet durable).

// checkNodeFailure: a node's failure is never a partition's.
func (u *run) checkNodeFailure(mb *member, err error) {
	if invariants.PartitionFailure(err) {
		u.violate(fmt.Errorf("poison: node %d failed for one partition's failure: %v", mb.id, err))
	}
	if invariants.WALFullFailure(err) {
		u.violate(fmt.Errorf("nospace: node %d failed for a full device: %v", mb.id, err))
	}
}

// onReopen holds node mb's reopen of a partition to a failed op (OnPartitionReopen).
func (u *run) onReopen(mb *member, topicID uint64, index uint32) {
	u.stats.PartitionReopens++
	if err := mb.poison.Reopened(u.s.Now(), invariants.PartRef{TopicID: topicID, Index: index}); err != nil {
		u.violate(fmt.Errorf("%w (node %d)", err, mb.id))
	}
}

// ownerReopened reports whether the owner of k's partition (any member, when not known)
// reopened it in [fromNs, toNs].
func (u *run) ownerReopened(k recKey, fromNs, toNs int64) bool {
	return u.anyOwner(k, func(p *invariants.Poison, ref invariants.PartRef) bool { return p.ReopenBetween(ref, fromNs, toNs) })
}

// ackLostWithPartition reports whether the ack of prev's lease (answered OK) may have
// been lost with the failed partition at its owner: a reopen before the ack was flushed,
// or ack files that had failed (the ack lived in memory) and a reopen or crash since.
// The owner took the ack somewhere between its call and its answer (a routed ack's
// answer crosses the network back), so a reopen from the call on may have lost it (cluster
// seed 558481: the reopen came 6 ms after the call, 16 ms before the answer reached the
// client).
func (u *run) ackLostWithPartition(k recKey, prev *leaseState, now int64) bool {
	window := u.ackFlushWindowNs() + u.clockSlackNs(prev.ackCallNs, now)
	if u.anyOwner(k, func(p *invariants.Poison, ref invariants.PartRef) bool {
		return p.AckLostAtReopen(ref, prev.ackCallNs, prev.ackDoneNs-prev.ackCallNs+window)
	}) {
		return true
	}
	unsafe := u.anyOwner(k, func(p *invariants.Poison, ref invariants.PartRef) bool {
		return p.AckNotPersisted(ref, prev.ackDoneNs, window)
	})
	return unsafe && (u.ownerCrashed(k, prev.ackCallNs, now) || u.ownerReopened(k, prev.ackCallNs, now))
}

func (u *run) anyOwner(k recKey, f func(*invariants.Poison, invariants.PartRef) bool) bool {
	ref := invariants.PartRef{TopicID: k.topicID, Index: k.part}
	if owner, ok := u.recOwner(k); ok {
		for _, o := range u.pastOwners(k, owner) {
			if f(u.members[o-1].poison, ref) {
				return true
			}
		}
		return false
	}
	for _, mb := range u.members {
		if f(mb.poison, ref) {
			return true
		}
	}
	return false
}

// awaitReopened runs the healed cluster until no up node has a failed partition, for at
// most invariants.ReopenBoundNs: a failed partition is reopened with a bounded retry.
func (u *run) awaitReopened() {
	if u.err != nil {
		return
	}
	failed := func() ([]string, bool) {
		var out []string
		for _, mb := range u.members {
			if mb.up {
				for _, p := range mb.n.FailedPartitions() {
					out = append(out, fmt.Sprintf("n%d:%s", mb.id, p))
				}
			}
		}
		return out, true
	}
	if err := invariants.AwaitReopened(u.s.Now, u.healStep, failed); err != nil {
		u.violate(err)
	}
}
