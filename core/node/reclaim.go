package node

import (
	"strconv"
	"strings"

	"github.com/narad/narad/core/reclaim"
)

// The files of a deleted incarnation are removed by a reclaimer (core/reclaim): a pass
// at the start (once the metastore replica is recovered: what an earlier process left)
// and after every topic delete the replica applies. A partition directory is dead when
// the replica deleted its incarnation (meta.Store.Deleted) and the node has no open
// partition of it.

// partitionRoots are the roots of partDir: every directory of a partition is under one.
var partitionRoots = []string{"parts", "acks"}

func (n *Node) newReclaimer() *reclaim.Reclaimer {
	return reclaim.New(reclaim.Config{Roots: partitionRoots, Dead: n.deadPartitionDir})
}

// deadPartitionDir reports whether directory name under a partition root is a partition
// of a deleted incarnation that is not open.
func (n *Node) deadPartitionDir(_, name string) bool {
	k, ok := parsePartDir(name)
	if !ok {
		return false // not a partition's: left alone
	}
	if _, open := n.parts[k]; open {
		return false
	}
	if !mutReclaimLive && !n.meta.Deleted(k.topicID) && !n.wipingCopy(k) && !n.givenAway(k) &&
		!(mutReleaseEarly && n.frozenHere(k)) {
		return false // a live partition owned here, or to be copied here
	}
	if n.opsInFlightFor(k) {
		n.reclaim.deferred = true // a pass follows the last completion (onDroppedDone)
		return false
	}
	return true
}

// opsInFlightFor reports whether an op of partition k's log or leases is in flight: a
// dropped partition's writes complete into nothing, and one landing after the reclaimer
// listed the directory would make it again.
func (n *Node) opsInFlightFor(k partKey) bool {
	for _, r := range n.ops { //narad:unordered (any match)
		if (r.comp == compPlog || r.comp == compLease) && r.part == k {
			return true
		}
	}
	return false
}

// onDroppedDone: an op of a dropped partition completed; a directory the reclaimer put
// off for it may be free now.
func (n *Node) onDroppedDone(nowNs int64) {
	if n.reclaim.deferred {
		n.reclaim.deferred = false
		n.reclaim.Request(nowNs)
	}
}

// parsePartDir reads the partition key of a directory name partDir made.
func parsePartDir(name string) (partKey, bool) {
	id, index, ok := strings.Cut(name, "-")
	if !ok || len(id) != 16 {
		return partKey{}, false
	}
	topicID, err1 := strconv.ParseUint(id, 16, 64)
	i, err2 := strconv.ParseUint(index, 10, 32)
	k := partKey{topicID: topicID, index: uint32(i)}
	if err1 != nil || err2 != nil || partDir("", k) != "/"+name {
		return partKey{}, false
	}
	return k, true
}

// noteDeletes asks for a pass when the replica applied a topic delete (or is new).
func (n *Node) noteDeletes(nowNs int64) {
	if !n.metaReady {
		return
	}
	if d := n.meta.TopicDeletes(); d != n.reclaim.seenDeletes || !n.reclaim.started {
		n.reclaim.seenDeletes, n.reclaim.started = d, true
		n.reclaim.Request(nowNs)
	}
}

func (n *Node) collectReclaim() bool {
	rd := n.reclaim.Ready()
	n.issue(compReclaim, partKey{}, rd.Ops)
	return len(rd.Ops) > 0
}

// ReclaimStats counts what the reclaimer did.
func (n *Node) ReclaimStats() reclaim.Stats { return n.reclaim.Stats() }

// IncarnationHeld reports whether the local replica holds incarnation id as a topic.
func (n *Node) IncarnationHeld(id uint64) bool {
	_, ok := n.meta.TopicByID(id)
	return ok
}

// IncarnationDeleted reports whether the local replica deleted incarnation id for good.
func (n *Node) IncarnationDeleted(id uint64) bool { return n.meta.Deleted(id) }

// reclaimState is the reclaimer and its progress.
type reclaimState struct {
	*reclaim.Reclaimer
	seenDeletes uint64 // the replica's deletes the reclaimer was asked for
	started     bool
	deferred    bool // a dead directory was left for ops in flight
}
