package clustersim

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

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
	if u.topicID == 0 && len(u.m.acked) > 0 {
		return // the main topic's id is not known yet (its create's answer was lost)
	}
	inLogs := u.mainTopicIDs(imgs)
	for _, id := range sortedKeys(u.m.acked) {
		if inLogs[id] {
			continue
		}
		found := false
		for _, img := range imgs {
			if p, ok := img.WALIDs[id]; ok && bytes.Equal(p, u.m.sent[id].payload) {
				found = true
				break
			}
		}
		if !found {
			u.violate(fmt.Errorf("invariant 1: message %d answered 202 is in no verified durable copy on any node (no partition log of its topic incarnation %d, no WAL at or above its checkpoint)", id, u.topicID))
			return
		}
	}
}

// mainTopicIDs are the messages found, byte for byte, in a verified partition log of the
// main topic's incarnation on some node: a copy in another topic's log credits nothing.
func (u *run) mainTopicIDs(imgs []invariants.BrokerImage) map[uint64]bool {
	ids := map[uint64]bool{}
	prefix := fmt.Sprintf("%016x-", u.topicID)
	for _, img := range imgs {
		for _, dir := range slices.Sorted(maps.Keys(img.Parts)) {
			if !strings.HasPrefix(dir, prefix) {
				continue
			}
			for _, p := range img.Parts[dir] { //narad:unordered (builds a set)
				if id, ok := invariants.MessageID(p); ok && u.m.sent[id] != nil && bytes.Equal(p, u.m.sent[id].payload) {
					ids[id] = true
				}
			}
		}
	}
	return ids
}

// checkVisibility covers the main topic, whose partitions keep their owners: a delivered
// offset must be in the durable log of its partition on some node (any node may deliver
// it: consumes are routed to owners).
func (u *run) checkVisibility(imgs []invariants.BrokerImage) {
	if u.topicID == 0 {
		return // not known yet (the create's answer was lost)
	}
	var recs []recKey
	for k := range u.m.seen { //narad:sorted
		if k.topicID == u.topicID {
			recs = append(recs, k)
		}
	}
	slices.SortFunc(recs, compareRecs)
	for _, k := range recs {
		found := false
		for i, img := range imgs {
			got, ok := partitionLog(img, u.topicID, k.part)[k.offset]
			if ok && !bytes.Equal(got, u.m.sent[u.m.seen[k]].payload) {
				u.violate(fmt.Errorf("invariant 4: offset %d of partition %d on node %d holds other bytes than the message delivered there", k.offset, k.part, i+1))
				return
			}
			found = found || ok
		}
		if !found {
			u.violate(fmt.Errorf("invariant 4: offset %d of partition %d was delivered and is gone from every durable log", k.offset, k.part))
			return
		}
	}
}

func compareRecs(a, b recKey) int {
	return cmp.Or(cmp.Compare(a.topicID, b.topicID), cmp.Compare(a.part, b.part), cmp.Compare(a.offset, b.offset))
}

// partitionLog is the log of the main topic's partition index (topicID, its incarnation)
// in one node's image.
func partitionLog(img invariants.BrokerImage, topicID uint64, index uint32) map[uint64][]byte {
	return img.Parts[fmt.Sprintf("%016x-%d", topicID, index)]
}

func sortedKeys[V any](m map[uint64]V) []uint64 { return slices.Sorted(maps.Keys(m)) }
