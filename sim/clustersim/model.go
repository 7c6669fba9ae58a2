package clustersim

import (
	"bytes"
	"fmt"
	"github.com/narad/narad/core/dispatch"
	"hash/fnv"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// The exact model of what a client may see (invariants 3 and 8): every message produced
// is remembered with its topic, key, pin and payload and with when its produce was in
// flight, and every delivery is held to it.

// sent is one produced message as its producer knows it.
type sent struct {
	topic   string
	key     []byte
	hasKey  bool
	pin     int64 // < 0: not pinned
	payload []byte
	node    int   // the member that took the produce (its dispatcher moves the record)
	sync    bool  // through ProduceSync
	callNs  int64 // the produce was sent
	endNs   int64 // answered, or lost with its node (0: still in flight)
}

// inFlightUntil is the end of the produce's flight as of now (still flying: now).
func (s *sent) inFlightUntil(nowNs int64) int64 {
	if s.endNs == 0 {
		return nowNs
	}
	return s.endNs
}

// hashPartition is the partition a key hashes to (FNV-1a modulo the partitions).
func hashPartition(key []byte, parts uint32) uint32 {
	h := fnv.New32a()
	h.Write(key)
	return h.Sum32() % parts
}

// moveKey names the partition records were moved away from.
type moveKey struct {
	topicID uint64
	from    uint32
}

// movedTo reports whether recorded moves made at or after sinceNs lead from partition
// from to partition to of incarnation topicID (reroutes chain when a sibling dies too).
func (u *run) movedTo(topicID uint64, from, to uint32, sinceNs int64) bool {
	return u.moves.LeadTo(topicID, from, to, sinceNs)
}

// onReroute notes a reroute by node mb's dispatcher, which may move records off a
// partition only when mb's replica marks its owner dead, or when the owner's partition
// failed (issue 13, points 8 and 4: failed commits to an owner alive and a healthy
// partition never reroute).
func (u *run) onReroute(mb *member, k dispatch.Key, to uint32) {
	if owner, ok := mb.n.PartitionOwner(k.Incarnation, k.Partition); ok && !mb.n.MemberDead(owner) && !u.partitionFailedAt(owner, k) {
		u.violate(fmt.Errorf("dispatch: node %d rerouted records of partition %d of incarnation %d to %d while its replica called their owner %d alive", mb.id, k.Partition, k.Incarnation, to, owner))
	}
	u.stats.RerouteChecks++
	u.reroutes[mb.id-1] = append(u.reroutes[mb.id-1], reroute{atNs: u.s.Now(), topicID: k.Incarnation, part: k.Partition})
	u.onMove(k.Incarnation, k.Partition, to, false)
}

// reroute is a reroute a node's dispatcher made: records off a partition of an incarnation.
type reroute struct {
	atNs    int64
	topicID uint64
	part    uint32
}

func (u *run) onMove(topicID uint64, from, to uint32, walk bool) {
	u.moves.Add(invariants.PartRef{TopicID: topicID, Index: from}, to, u.s.Now())
	if walk {
		u.stats.Walks++
	}
}

// checkDelivery holds one delivered (or replayed) message to its produce: a message
// produced with these bytes (invariant 3), not definitely refused, from its topic and an
// incarnation of it that existed while the produce was in flight, on its pin or key's
// partition unless a recorded move took it elsewhere (invariant 8), with its key. It
// returns the message's id.
func (u *run) checkDelivery(from uint64, msg node.Message) (uint64, bool) {
	id, ok := invariants.MessageID(msg.Payload)
	s := u.m.sent[id]
	if !ok || s == nil || !bytes.Equal(s.payload, msg.Payload) {
		u.violate(fmt.Errorf("invariant 3: node %d delivered a message never produced with these bytes (%q…)", from, msg.Payload[:min(len(msg.Payload), 24)]))
		return 0, false
	}
	if u.m.refused[id] {
		u.violate(fmt.Errorf("invariant 3: node %d delivered message %d whose produce was definitely refused", from, id))
		return 0, false
	}
	if msg.HasKey != s.hasKey || !bytes.Equal(msg.Key, s.key) {
		u.violate(fmt.Errorf("invariant 3: node %d delivered message %d with key %q (has %v), produced with %q (has %v)", from, id, msg.Key, msg.HasKey, s.key, s.hasKey))
		return 0, false
	}
	if err := u.checkIncarnation(id, s, msg); err != nil {
		u.violate(fmt.Errorf("invariant 8: node %d delivered message %d %w", from, id, err))
		return 0, false
	}
	if err := u.checkPartition(s, msg); err != nil {
		u.violate(fmt.Errorf("invariant 8: node %d delivered message %d %w", from, id, err))
		return 0, false
	}
	u.stats.PlaceChecks++
	return id, true
}

// checkIncarnation: the topic the message was produced to, and an incarnation of it
// that existed while the produce was in flight.
func (u *run) checkIncarnation(id uint64, s *sent, msg node.Message) error {
	if msg.Topic != s.topic {
		return fmt.Errorf("from topic %q, produced to %q", msg.Topic, s.topic)
	}
	if msg.TopicID == 0 {
		return fmt.Errorf("from topic %q without its incarnation", msg.Topic)
	}
	if s.topic == topic {
		if u.topicID != 0 && msg.TopicID != u.topicID {
			return fmt.Errorf("from incarnation %d of topic %q, whose only incarnation is %d", msg.TopicID, topic, u.topicID)
		}
		return nil
	}
	if msg.TopicID == u.topicID {
		return fmt.Errorf("of topic %q from incarnation %d of topic %q", churnTopic, msg.TopicID, topic)
	}
	return u.churn.check(msg.TopicID, s.callNs, s.inFlightUntil(u.s.Now()), u.s.Now())
}

// checkPartition: a pinned message on its pin, a keyed one on its key's partition,
// unless a move recorded since its produce took it elsewhere.
func (u *run) checkPartition(s *sent, msg node.Message) error {
	want, what := uint32(0), ""
	switch {
	case s.pin >= 0:
		want, what = uint32(s.pin), "pinned to"
	case s.hasKey:
		want, what = hashPartition(s.key, u.o.Partitions), "whose key hashes to"
	default:
		return nil
	}
	if msg.Partition == want || u.movedTo(msg.TopicID, want, msg.Partition, s.callNs) {
		return nil
	}
	return fmt.Errorf("at partition %d of incarnation %d, %s partition %d, with no reroute or walk from there on record since its produce", msg.Partition, msg.TopicID, what, want)
}

// rerouteAfterFailureNs bounds how long after a failed op on a partition's files its
// owner may still answer commits "partition failed" and a dispatcher still reroute for
// it: the longest wait for the reopen, then the hold of the last such answer, and the
// commit timeout for an answer on its way.
func (u *run) rerouteAfterFailureNs() int64 {
	return node.PartitionReopenMaxNs + dispatch.PartitionFailedHoldNs + u.o.CommitTimeoutNs
}

// partitionFailedAt reports whether an op on partition k's files failed on owner's disk
// recently enough to explain a reroute now.
func (u *run) partitionFailedAt(owner uint64, k dispatch.Key) bool {
	if owner == 0 || int(owner) > len(u.members) {
		return false
	}
	ref := invariants.PartRef{TopicID: k.Incarnation, Index: k.Partition}
	return u.members[owner-1].poison.FailedWithin(ref, u.s.Now()-u.rerouteAfterFailureNs(), u.s.Now())
}
