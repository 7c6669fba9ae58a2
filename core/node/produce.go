package node

import (
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/wal"
)

type produceOp struct {
	remaining int
	accepted  int
	err       error
}

type walAppend struct {
	client uint64
	rec    wal.Record
}

// catalog adapts the metastore replica to the dispatcher's view.
type catalog struct{ m *meta.Store }

func (c catalog) Topic(name string) (uint64, uint32, bool) {
	t, ok := c.m.Topic(name)
	return t.ID, t.Partitions, ok
}
func (c catalog) CaughtUp() bool { return c.m.CaughtUp() }

// Owner is the member owning the partition (this node when the partitions have no owners)
// and whether the controller marked it dead.
func (c catalog) Owner(incarnation uint64, partition uint32) (uint64, bool) {
	owner := c.m.ID()
	if owners := c.m.Owners(incarnation); int(partition) < len(owners) {
		owner = owners[partition]
	}
	return owner, c.m.MemberDead(owner)
}

// Produce accepts msgs for topic: every message is appended to the ingress WAL in the
// same group commit, and the answer (Accepted = len(msgs)) comes once all are durable.
// Validation is all-or-nothing and happens before anything is written.
func (n *Node) Produce(nowNs int64, token uint64, topic string, msgs []ProduceMessage) {
	defer n.collect(nowNs)
	t, ok := n.readyTopic(token, topic)
	if !ok || n.refuseDraining(token) {
		return
	}
	if err := checkProduceCount(msgs); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	if n.disp.Full() {
		n.respond(Response{Token: token, Err: fmt.Errorf("%w: dispatcher backlog full", ErrBusy)})
		return
	}
	recs := make([]wal.Record, len(msgs))
	for i, m := range msgs {
		part, err := n.pickPartition(t, m)
		if err != nil {
			n.respond(Response{Token: token, Err: prefixed(len(msgs), i, err)})
			return
		}
		recs[i] = wal.Record{Topic: topic, Incarnation: t.ID, Partition: part, HasKey: m.HasKey,
			Key: m.Key, Payload: m.Payload, TimestampMs: nowNs / 1_000_000}
		if err := recs[i].Validate(); err != nil {
			n.respond(
				Response{Token: token, Err: prefixed(len(msgs), i, fmt.Errorf("%w: %v", ErrInvalid, err))},
			)
			return
		}
	}
	n.produces[token] = &produceOp{remaining: len(recs)}
	tokens := make([]uint64, len(recs))
	for i, r := range recs {
		tokens[i] = n.inflight.add(entry{purpose: forWALAppend, wal: walAppend{client: token, rec: r}})
	}
	n.wal.AppendBatch(nowNs, tokens, recs) // one group commit for the whole batch

}

// checkProduceCount: a produce carries 1 to ProduceMax messages.
func checkProduceCount(msgs []ProduceMessage) error {
	if len(msgs) == 0 || len(msgs) > ProduceMax {
		return fmt.Errorf("%w: 1 to %d messages", ErrInvalid, ProduceMax)
	}
	return nil
}

func prefixed(count, i int, err error) error {
	if count == 1 {
		return err
	}
	return fmt.Errorf("message %d: %w", i, err)
}

// pickPartition: an explicit partition pins (and must exist); a key hashes (FNV-1a modulo
// the partition count); neither rotates per topic, over the partitions this node owns
// with Config.ProduceLocalPartitions. It is a pure function of the local
// replica: the accept path never waits on liveness (seed: resolveAcceptedProducePartition).
func (n *Node) pickPartition(t meta.Topic, m ProduceMessage) (uint32, error) {
	switch {
	case m.Partition >= 0:
		if m.Partition >= int64(t.Partitions) {
			return 0, fmt.Errorf(
				"%w: partition %d, topic has %d",
				ErrPartitionRange,
				m.Partition,
				t.Partitions,
			)
		}
		if p := n.parts[partKey{topicID: t.ID, index: uint32(m.Partition)}]; p != nil && p.failed != nil {
			return 0, fmt.Errorf("%w: partition %d: %v", ErrPartitionFailed, m.Partition, p.failed)
		}
		return uint32(m.Partition), nil
	case m.HasKey:
		h := fnv.New32a()
		h.Write(m.Key)
		if mutKeyOffByOne {
			return (h.Sum32() + 1) % t.Partitions, nil
		}
		return h.Sum32() % t.Partitions, nil
	default:
		p := n.cursor(t.Name) % t.Partitions
		if n.cfg.ProduceLocalPartitions && !mutLocalIgnored {
			if skip, ok := n.ownedAhead(t, p); ok {
				n.rr[t.Name] += skip + 1
				return (p + skip) % t.Partitions, nil
			}
		}
		n.rr[t.Name]++
		return p, nil
	}
}

// ownedAhead is how far past partition from (0: from itself) lies the first partition of
// t this node owns on its replica; false when it owns none.
func (n *Node) ownedAhead(t meta.Topic, from uint32) (uint32, bool) {
	return aheadOwned(n.meta.Owners(t.ID), n.meta.ID(), t.Partitions, from)
}

// aheadOwned is ownedAhead over owners (partition index to member; an index past its end
// is unowned, which makes it self's, as in ownerOf) of parts partitions.
func aheadOwned(owners []uint64, self uint64, parts, from uint32) (uint32, bool) {
	for skip := range parts {
		i := (from + skip) % parts
		if int(i) >= len(owners) || owners[i] == self {
			return skip, true
		}
	}
	return 0, false
}

// onAppendDone: a record is durable (or failed). A durable record goes to the
// dispatcher; the produce is answered when its last record is.
func (n *Node) onAppendDone(nowNs int64, d wal.AppendDone) {
	e, ok := n.inflight.take(d.Token, forWALAppend)
	if !ok {
		return
	}
	wa := e.wal
	if d.Err == nil {
		wa.rec.Seq = d.Seq
		n.disp.Add(nowNs, wa.rec)
	}
	op := n.produces[wa.client]
	assert.That(op != nil && op.remaining > 0, "node: a WAL answer for a produce already answered")
	op.remaining--
	switch {
	case d.Err == nil:
		op.accepted++
	case op.err == nil:
		op.err = walError(d.Err)
	}
	if op.remaining == 0 {
		delete(n.produces, wa.client)
		n.respond(Response{Token: wa.client, Accepted: op.accepted, Err: op.err})
	}
}

func walError(err error) error {
	switch {
	case errors.Is(err, wal.ErrFull):
		return fmt.Errorf("%w: %v", ErrBusy, err)
	case errors.Is(err, wal.ErrNotReady):
		return fmt.Errorf("%w: %v", ErrNotReady, err)
	case errors.Is(err, wal.ErrNoSpace):
		return fmt.Errorf("%w: %v", ErrNoSpace, err)
	}
	return fmt.Errorf("%w: %v", ErrWALFailed, err)
}

// cursor is a round-robin cursor, starting at a random place so that the nodes of a
// cluster (and restarts) do not all begin on partition 0.
func (n *Node) cursor(name string) uint32 {
	c, ok := n.rr[name]
	if !ok {
		c = uint32(n.rand.Uint64())
		n.rr[name] = c
	}
	return c
}
