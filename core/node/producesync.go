package node

import (
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/core/wire"
)

// The synchronous internal produce path (the seed's second partition picker). It skips
// the ingress WAL: each message goes straight to a partition's owner as a commit
// (commitDurable: append, fsync, read back, verify), and the answer comes once every
// commit was verified, so the messages are consumable when it does. It is for
// producers inside the process (nodeshell.ProduceSync), not the HTTP API, whose produce
// stays WAL-first. Because nothing is staged locally, a dead owner's partition would
// blackhole its share of the keyspace: pickProducePartition walks past it.

// Limits of the synchronous path.
const (
	// ProduceSyncBytesMax bounds the key and payload bytes of one synchronous produce,
	// so that each owner's share fits one commit (dispatch.DefaultCommitBytesMax).
	ProduceSyncBytesMax = dispatch.DefaultCommitBytesMax
	// ProduceSyncInFlightMax bounds the synchronous produces waiting for their commits.
	ProduceSyncInFlightMax = 256
)

type syncProduce struct {
	token     uint64
	remaining int // partition commits not answered yet
	committed int
	err       error
}

// ProduceSync commits msgs for topic at their partitions' owners, this node or peers,
// and answers (Accepted = len(msgs)) once every commit is durable and verified. Validation
// is all-or-nothing and happens before anything is sent. A failed or timed-out commit
// answers ErrNotCommitted: the messages of the other partitions, and maybe of that one,
// may be stored (a retry may duplicate, as for any produce).
func (n *Node) ProduceSync(nowNs int64, token uint64, topic string, msgs []ProduceMessage) {
	defer n.collect(nowNs)
	t, ok := n.readyTopic(token, topic)
	if !ok || n.refuseDraining(token) {
		return
	}
	groups, err := n.syncGroups(t, msgs)
	if err == nil && n.syncInFlight >= ProduceSyncInFlightMax {
		err = fmt.Errorf("%w: %d synchronous produces in flight", ErrBusy, n.syncInFlight)
	}
	if err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	n.syncInFlight++
	op := &syncProduce{token: token, remaining: len(groups)}
	for _, p := range slices.Sorted(maps.Keys(groups)) {
		n.commitSync(nowNs, t, p, groups[p], op)
	}
}

// syncGroups validates msgs and splits them by the partition pickProducePartition picks.
func (n *Node) syncGroups(t meta.Topic, msgs []ProduceMessage) (map[uint32][]plog.Entry, error) {
	if err := checkProduceCount(msgs); err != nil {
		return nil, err
	}
	size := 0
	for _, m := range msgs {
		size += len(m.Key) + len(m.Payload)
	}
	if size > ProduceSyncBytesMax {
		return nil, fmt.Errorf(
			"%w: %d key and payload bytes, at most %d",
			ErrInvalid,
			size,
			ProduceSyncBytesMax,
		)
	}
	groups := map[uint32][]plog.Entry{}
	for i, m := range msgs {
		rec := wal.Record{Topic: t.Name, HasKey: m.HasKey, Key: m.Key, Payload: m.Payload}
		if err := rec.Validate(); err != nil {
			return nil, prefixed(len(msgs), i, fmt.Errorf("%w: %v", ErrInvalid, err))
		}
		p, err := n.pickProducePartition(t, m)
		if err != nil {
			return nil, prefixed(len(msgs), i, err)
		}
		groups[p] = append(groups[p], plog.Entry{Key: m.Key, HasKey: m.HasKey, Payload: m.Payload})
	}
	return groups, nil
}

// pickProducePartition is the accept path's choice (pin, key hash or round-robin), then,
// unless pinned, the first partition from there on (wrapping) whose owner membership does
// not mark dead: "so a dead node doesn't blackhole its share of the keyspace". Keyed
// messages of a dead owner's partition therefore land elsewhere (ordering is not a
// contract). With every owner dead the first choice stands and its commit fails.
func (n *Node) pickProducePartition(t meta.Topic, m ProduceMessage) (uint32, error) {
	p, err := n.pickPartition(t, m)
	if err != nil || m.Partition >= 0 {
		return p, err
	}
	q := walkPastDead(
		p,
		t.Partitions,
		func(q uint32) bool { return n.meta.MemberDead(n.ownerOf(t, q)) },
	)
	if q != p && n.cfg.OnWalk != nil {
		n.cfg.OnWalk(t.ID, p, q)
	}
	return q, nil
}

// walkPastDead is the first partition from p on (wrapping, of parts) that is not dead,
// or p when all are.
func walkPastDead(p, parts uint32, dead func(uint32) bool) uint32 {
	for i := range parts {
		if q := (p + i) % parts; !dead(q) {
			return q
		}
	}
	return p
}

// commitSync sends one partition's share of a synchronous produce to its owner: a commit
// job on this node's partition, or a CommitRequest call to the owning peer.
func (n *Node) commitSync(nowNs int64, t meta.Topic, p uint32, es []plog.Entry, op *syncProduce) {
	owner := n.ownerOf(t, p)
	if owner == n.meta.ID() {
		n.enqueueCommit(nowNs, t, p, commitJob{entries: es, done: func(_ int64, err error) {
			n.syncCommitted(op, len(es), err)
		}})
		return
	}
	recs := make([]wire.Record, len(es))
	for i, e := range es {
		recs[i] = wire.Record{HasKey: e.HasKey, Key: e.Key, Payload: e.Payload}
	}
	build := func(id uint64) wire.Message {
		return wire.CommitRequest{ID: id, Topic: t.Name, Incarnation: t.ID, Partition: p, Records: recs}
	}
	n.call(nowNs, owner, n.commitTimeout(), build, func(_ int64, m wire.Message) {
		n.syncCommitted(op, len(es), remoteCommitError(owner, m))
	})
}

// remoteCommitError reads a peer's answer to a synchronous commit (nil m: none in time).
func remoteCommitError(owner uint64, m wire.Message) error {
	resp, ok := m.(wire.CommitResponse)
	switch {
	case !ok:
		return fmt.Errorf("no answer from owner %d in time", owner)
	case resp.Code != wire.CodeOK:
		return fmt.Errorf("owner %d answered code %d", owner, resp.Code)
	}
	return nil
}

// syncCommitted takes one partition commit's outcome; the last one answers the produce.
func (n *Node) syncCommitted(op *syncProduce, count int, err error) {
	op.remaining--
	if err == nil {
		op.committed += count
	} else if op.err == nil {
		op.err = fmt.Errorf("%w: %v", ErrNotCommitted, err)
	}
	if op.remaining == 0 {
		n.syncInFlight--
		n.respond(Response{Token: op.token, Accepted: op.committed, Err: op.err})
	}
}
