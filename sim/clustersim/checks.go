package clustersim

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/invariants"
)

// checkEvery: the durable images are checked every this many events (and at each crash
// and at the end).
const checkEvery = 500

// readImage is node mb's durable image (invariants.ReadBrokerImage).
func (u *run) readImage(mb *member) invariants.BrokerImage {
	return invariants.ReadBrokerImage(mb.d.DurableFiles(), invariants.MessageID)
}

// checkImages is invariant 1 (with 5: a record below a WAL's durable checkpoint must be
// in a partition log) over the whole cluster: every message answered 202 is in a
// verified durable copy on some node, in a partition log or in a WAL at or above its
// checkpoint, byte for byte. And invariant 4: every offset delivered stays, with the same
// bytes, in the durable log of the node that delivered it.
func (u *run) checkImages() {
	if u.err != nil {
		return
	}
	u.stats.Checks++
	imgs := make([]invariants.BrokerImage, len(u.members))
	for i, mb := range u.members {
		imgs[i] = u.readImage(mb)
	}
	u.checkDurable(imgs)
	u.checkVisibility(imgs)
}

func (u *run) checkDurable(imgs []invariants.BrokerImage) {
	for _, id := range sortedKeys(u.m.acked) {
		if u.inPartitionLog(imgs, id) {
			continue
		}
		found := false
		for _, img := range imgs {
			if p, ok := img.WALIDs[id]; ok && bytes.Equal(p, u.m.produced[id]) {
				found = true
				break
			}
		}
		if !found {
			u.violate(fmt.Errorf("invariant 1: message %d answered 202 is in no verified durable copy on any node (no partition log, no WAL at or above its checkpoint)", id))
			return
		}
	}
}

func (u *run) inPartitionLog(imgs []invariants.BrokerImage, id uint64) bool {
	for _, img := range imgs {
		if img.IDs[id] {
			return true
		}
	}
	return false
}

// checkVisibility covers the main topic, whose partitions keep their owners: a delivered
// offset must be in the durable log of its partition on some node (any node may deliver
// it: consumes are routed to owners).
func (u *run) checkVisibility(imgs []invariants.BrokerImage) {
	if u.topicID == 0 {
		return // not known yet (the create's answer was lost)
	}
	for _, part := range slices.Sorted(maps.Keys(u.m.seen)) {
		offs := u.m.seen[part]
		for _, off := range sortedKeys(offs) {
			found := false
			for i, img := range imgs {
				got, ok := partitionLog(img, u.topicID, part)[off]
				if ok && !bytes.Equal(got, u.m.produced[offs[off]]) {
					u.violate(fmt.Errorf("invariant 4: offset %d of partition %d on node %d holds other bytes than the message delivered there", off, part, i+1))
					return
				}
				found = found || ok
			}
			if !found {
				u.violate(fmt.Errorf("invariant 4: offset %d of partition %d was delivered and is gone from every durable log", off, part))
				return
			}
		}
	}
}

// partitionLog is the log of the main topic's partition index (topicID, its incarnation)
// in one node's image.
func partitionLog(img invariants.BrokerImage, topicID uint64, index uint32) map[uint64][]byte {
	return img.Parts[fmt.Sprintf("%016x-%d", topicID, index)]
}

func sortedKeys[V any](m map[uint64]V) []uint64 { return slices.Sorted(maps.Keys(m)) }
