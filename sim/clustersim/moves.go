package clustersim

import (
	"slices"
)

// Partition moves (issue 14): the nodes' metastore controller moves partitions to a
// member that joins (decommission seeds: the spare), away from a draining one, and after
// a leader change when they are uneven (core/meta rebalance_control.go); the nodes copy
// them (core/node move.go). A move keeps every record at its offset, so the checks of
// offsets and bytes (invariants 3, 4 and porcupine's per-partition model) hold across it
// as they are. What changes is who serves: the owner cache moves with the cutover, and a
// lease taken at the source ends with the move (causeMove); acks move with the partition,
// so an acked record is delivered again only after a crash of an owner it had (its
// source among them) inside the ack-flush window.

// cutover is one move a destination took over.
type cutover struct {
	atNs     int64
	from, to uint64
}

// onCutover records node mb taking partition index of topicID over from member from.
func (u *run) onCutover(mb *member, topicID uint64, index uint32, from uint64) {
	k := moveKey{topicID, index}
	u.stats.Cutovers++
	u.cutovers[k] = append(u.cutovers[k], cutover{atNs: u.s.Now(), from: from, to: mb.id})
	u.owners[k] = mb.id
	u.record('v', topicID, uint64(index), from, mb.id)
}

// movedBetween reports whether k's partition was taken over by another member in
// [fromNs, toNs].
func (u *run) movedBetween(k recKey, fromNs, toNs int64) bool {
	for _, c := range u.cutovers[moveKey{k.topicID, k.part}] {
		if c.atNs >= fromNs && c.atNs <= toNs {
			return true
		}
	}
	return false
}

// pastOwners lists owner and every member k's partition was moved away from.
func (u *run) pastOwners(k recKey, owner uint64) []uint64 {
	out := []uint64{owner}
	for _, c := range u.cutovers[moveKey{k.topicID, k.part}] {
		if !slices.Contains(out, c.from) {
			out = append(out, c.from)
		}
	}
	return out
}
