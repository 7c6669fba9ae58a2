package nodesim

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/narad/narad/invariants"
)

// readImage is the node's durable image (invariants.ReadBrokerImage).
func (u *run) readImage() invariants.BrokerImage {
	return invariants.ReadBrokerImage(u.d.DurableFiles(), invariants.MessageID)
}

// checkDurable is invariant 1 (and 5: a record below the durable checkpoint must be in a
// partition log): every message answered 202 is in at least one verified durable copy.
func (u *run) checkDurable() {
	if u.err != nil {
		return
	}
	u.stats.Checks++
	img := u.readImage()
	for _, id := range sortedKeys(u.m.acked) {
		if img.IDs[id] || u.retentionMayRemove(id) {
			continue
		}
		p, ok := img.WALIDs[id]
		if !ok {
			u.violate(fmt.Errorf("invariant 1: message %d answered 202 is in no durable copy (neither the WAL at or above its checkpoint nor a partition log)", id))
			return
		}
		if !bytes.Equal(p, u.m.produced[id]) {
			u.violate(fmt.Errorf("invariant 1: message %d answered 202 differs in its only durable copy (the WAL)", id))
			return
		}
	}
}

// checkVisibility is invariant 4: a record delivered at an offset stays at that offset in
// its partition's durable log, byte for byte.
func (u *run) checkVisibility() {
	if u.err != nil {
		return
	}
	img := u.readImage()
	for _, pr := range sortedParts(u.m.seen) {
		dir := fmt.Sprintf("%016x-%d", pr.topicID, pr.index)
		offs := u.m.seen[pr]
		for _, off := range sortedKeys(offs) {
			if u.mayBeRemoved(recKey{pr: pr, off: off}) {
				continue
			}
			u.stats.VisibilityChecked++
			got, ok := img.Parts[dir][off]
			if !ok {
				u.violate(fmt.Errorf("invariant 4: offset %d of partition %s was delivered and is gone from the durable log", off, dir))
				return
			}
			if !bytes.Equal(got, u.m.produced[offs[off]]) {
				u.violate(fmt.Errorf("invariant 4: offset %d of partition %s holds other bytes than the message delivered there", off, dir))
				return
			}
		}
	}
}

func sortedParts[V any](m map[partRef]V) []partRef {
	out := make([]partRef, 0, len(m))
	for k := range m { //narad:sorted
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b partRef) int {
		if a.topicID != b.topicID {
			return cmpU64(a.topicID, b.topicID)
		}
		return cmpU64(uint64(a.index), uint64(b.index))
	})
	return out
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// retentionMayRemove: message id was produced more than the retention ago, so its record
// may be gone by retention (its commit came after its produce was sent).
func (u *run) retentionMayRemove(id uint64) bool {
	return u.o.RetentionMs > 0 && u.m.sent[id].callNs/1_000_000 < u.s.Now()/1_000_000-u.o.RetentionMs
}

// mayBeRemoved: retention may have removed record k (its commit is older than the
// retention, or the partition's stats showed an oldest offset above it).
func (u *run) mayBeRemoved(k recKey) bool {
	return u.o.RetentionMs > 0 && (k.off < u.m.removed[k.pr] || u.m.commitMs[k] < u.s.Now()/1_000_000-u.o.RetentionMs)
}
