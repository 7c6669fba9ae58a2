package node

import (
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/wire"
)

// Partition moves, the source's side: it answers fetches of the partitions it owns
// (whole batches from an offset on), stops taking commits, leases and acks of a
// partition whose move its replica holds frozen, and, once its replica gave the
// partition to another member and that member answers for it, drops its copy and
// removes its files (the reclaimer takes directories of partitions owned elsewhere).

// errMoving refuses a commit, an ack or a lease of a frozen partition: retried later,
// the owner by then is the destination (or the source again, after an abort).
var errMoving = fmt.Errorf("%w: the partition is moving to another member", ErrNotReady)

// MoveProbeIntervalNs is how often a source asks the new owner whether it serves.
const MoveProbeIntervalNs = 500_000_000

// frozenHere reports whether k is a partition this node gives away in a frozen move.
func (n *Node) frozenHere(k partKey) bool {
	mv, ok := n.meta.MoveOf(k.topicID, k.index)
	return ok && mv.State == meta.MoveFrozen && mv.From == n.meta.ID()
}

// fetchServe is one fetch being answered: the batches read so far.
type fetchServe struct {
	to      uint64
	id      uint64
	next    uint64
	max     int
	bytes   int
	batches []wire.FetchBatch
}

// onFetchRequest answers a destination's fetch of a partition this node owns. A fetch
// with BytesMax 0 asks only for the offsets; it is also how a former owner asks whether
// the new one serves (a release), so it needs no move.
func (n *Node) onFetchRequest(nowNs int64, from uint64, m wire.FetchRequest) {
	refuse := func(c wire.Code) { n.send(from, wire.FetchResponse{ID: m.ID, Code: c}) }
	if n.IsReady() != nil {
		refuse(wire.CodeRetry)
		return
	}
	t, ok := n.meta.TopicByID(m.Incarnation)
	switch {
	case !ok || m.Partition >= t.Partitions:
		refuse(wire.CodeIncarnation)
		return
	case n.ownerOf(t, m.Partition) != n.meta.ID() ||
		n.meta.PartitionEpoch(t.ID, m.Partition) != m.Epoch:
		refuse(wire.CodeNotOwner)
		return
	}
	mv, moving := n.meta.MoveOf(t.ID, m.Partition)
	if m.BytesMax > 0 && (!moving || mv.To != from || mv.Epoch != m.Epoch) {
		refuse(wire.CodeRetry) // a copy needs the move applied here first
		return
	}
	p := n.partitionFor(nowNs, t, m.Partition)
	switch {
	case p.failed != nil:
		refuse(wire.CodePartitionFailed)
		return
	case !p.ready():
		refuse(wire.CodeRetry)
		return
	}
	fs := &fetchServe{to: from, id: m.ID, next: max(m.From, p.log.OldestOffset()),
		max: int(min(m.BytesMax, wire.FetchBytesMax))}
	n.serveFetch(nowNs, p, fs)
}

// serveFetch reads the next batch, or answers when the fetch has enough.
func (n *Node) serveFetch(nowNs int64, p *partition, fs *fetchServe) {
	off := p.log.NextHeld(fs.next)
	if fs.max == 0 || fs.bytes >= fs.max || off >= p.log.HighWatermark() ||
		len(fs.batches) >= wire.FetchBatchesMax {
		n.answerFetch(p, fs)
		return
	}
	fs.next = off
	id := n.inflight.add(entry{purpose: forFetchRead, fetch: fs, part: p.key})
	p.log.Read(nowNs, id, off, plog.EntriesMax)
}

// onFetchRead takes one batch read for a fetch; an error answers what was read.
func (n *Node) onFetchRead(nowNs int64, p *partition, r plog.ReadDone) {
	e, ok := n.inflight.take(r.Token, forFetchRead)
	if !ok {
		return
	}
	fs := e.fetch
	if r.Err != nil || len(r.Records) == 0 {
		n.answerFetch(p, fs)
		return
	}
	b := wire.FetchBatch{Base: r.Records[0].Offset, CommitMs: r.Records[0].CommitTimeMs,
		Records: make([]wire.Record, len(r.Records))}
	for i, s := range r.Records {
		b.Records[i] = wire.Record{HasKey: s.HasKey, Key: s.Key, Payload: s.Payload}
		fs.bytes += len(s.Key) + len(s.Payload) + 8
	}
	fs.batches = append(fs.batches, b)
	fs.next = b.Base + uint64(len(b.Records))
	n.serveFetch(nowNs, p, fs)
}

// answerFetch sends what fs read, with the partition's offsets; frozen once no commit is
// in flight or waiting, and then, when the copy reaches the high-watermark, the acks.
func (n *Node) answerFetch(p *partition, fs *fetchServe) {
	hw := p.log.HighWatermark()
	resp := wire.FetchResponse{ID: fs.id, Code: wire.CodeOK, Oldest: p.log.OldestOffset(),
		HighWatermark: hw, Next: p.log.NextHeld(fs.next), Batches: fs.batches,
		Frozen: n.frozenHere(p.key) && p.inflight == nil && len(p.queued) == 0 && p.failed == nil}
	if resp.Frozen && resp.Next == hw && fs.max > 0 {
		floor, acked := p.leases.AckState()
		if len(acked) <= wire.FetchAckedMax {
			resp.HasAcks, resp.AckFloor, resp.Acked = true, floor, acked
		}
	}
	n.send(fs.to, resp)
}

// refuseFrozenAcks answers whether any handle names a partition frozen here: the acks
// are refused whole (ErrNotReady, retried). A settle because the ack state has gone to
// the destination. An extend or a release too: the lease may be the destination's (taken
// once it applied the cutover, which this replica has not yet), and serving those held
// here was tried and let a record be delivered a second time while its lease was live
// (cluster seed 169164; the path is not found yet).
func (n *Node) refuseFrozenAcks(handles []string) error {
	for _, h := range handles {
		if k, _, _, err := decodeHandle(h); err == nil && n.frozenHere(k) {
			return errMoving
		}
	}
	return nil
}

// refuseMovedAcks answers whether a routed ack names a partition this node's replica
// gives to another member: the node that routed it knows an older owner (its replica
// lags), so the acks are refused whole (ErrNotReady, retried: by then it routes them to
// the new owner, which holds the leases taken since the move; cluster seed 8). "Gone"
// would be wrong for those.
func (n *Node) refuseMovedAcks(t meta.Topic, handles []string) error {
	for _, h := range handles {
		if k, _, _, err := decodeHandle(h); err == nil && k.topicID == t.ID && k.index < t.Partitions &&
			n.ownerOf(t, k.index) != n.meta.ID() {
			return fmt.Errorf("%w: partition %d moved to member %d", ErrNotReady, k.index,
				n.ownerOf(t, k.index))
		}
	}
	return nil
}

// release is a partition this node owned and gave away: its copy is dropped once the
// new owner answers for it at the new epoch with a high-watermark at least this copy's.
type release struct {
	key     partKey
	busy    bool
	afterNs int64
}

// syncReleases notes every open partition the replica gives to another member (and
// that no move copies here): each is released after the new owner serves.
func (n *Node) syncReleases(nowNs int64) {
	for _, k := range slices.Clone(n.partKeys) {
		if mutReleaseEarly && n.frozenHere(k) { // the planted bug: gone before the cutover
			n.dropPartition(k, errMoving)
			n.reclaim.Request(nowNs)
			continue
		}
		if p := n.parts[k]; p != nil && p.logReady {
			n.markIfStale(p) // owned here again, by a forget's reassignment
		}
		if n.moves.releases[k] == nil && n.givenAway(k) {
			n.moves.releases[k] = &release{key: k, afterNs: nowNs}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(n.moves.releases), comparePartKeys) {
		if n.parts[k] == nil || !n.givenAway(k) {
			delete(n.moves.releases, k) // dropped otherwise, or owned here again
		}
	}
}

// markIfStale marks an open partition whose recovered log the current epoch does not
// continue: the replica gave the partition to this node by a forget's reassignment (not a
// cutover), which starts it empty at its epoch's base, yet the log holds offsets below
// that. It is a copy this node gave away before (a move's source whose release was still
// pending, or whose files the reclaimer had not removed yet), and its offsets may be
// another owner's since (cluster seed 740): it is removed before the partition is served.
func (n *Node) markIfStale(p *partition) {
	k := p.key
	if mutServeStale || p.stale || p.log.OldestOffset() >= n.epochBase(k) ||
		n.meta.CutOver(k.topicID, k.index) || n.moves.copies[k] != nil {
		return // epoch 0 has base 0: never below it
	}
	if t, ok := n.meta.TopicByID(k.topicID); !ok || n.ownerOf(t, k.index) != n.meta.ID() {
		return
	}
	p.stale = true
	n.moves.stale = append(n.moves.stale, k)
}

// discardStale drops the partitions marked stale and removes their files before they are
// served again (an empty log at the epoch's base).
func (n *Node) discardStale(nowNs int64) bool {
	for _, k := range n.moves.stale {
		if p := n.parts[k]; p != nil && p.stale {
			n.dropPartition(k, fmt.Errorf("%w: an older copy of partition %d is removed",
				ErrNotReady, k.index))
			n.discardFiles(nowNs, k)
		}
	}
	acted := len(n.moves.stale) > 0
	n.moves.stale = n.moves.stale[:0]
	return acted
}

// givenAway reports whether the replica gives partition k of a live incarnation to
// another member, and no move copies it here: this node's copy, if any, is an old one.
func (n *Node) givenAway(k partKey) bool {
	t, ok := n.meta.TopicByID(k.topicID)
	return ok && k.index < t.Partitions && len(n.meta.Owners(k.topicID)) > int(k.index) &&
		n.ownerOf(t, k.index) != n.meta.ID() && n.moves.copies[k] == nil
}

func (n *Node) advanceReleases(nowNs int64) bool {
	acted := false
	for _, k := range slices.SortedFunc(maps.Keys(n.moves.releases), comparePartKeys) {
		r := n.moves.releases[k]
		t, ok := n.meta.TopicByID(k.topicID)
		if r.busy || nowNs < r.afterNs {
			continue
		}
		if !ok || n.IsReady() != nil {
			r.afterNs = nowNs + MoveProbeIntervalNs
			continue
		}
		r.busy, acted = true, true
		owner, epoch := n.ownerOf(t, k.index), n.meta.PartitionEpoch(k.topicID, k.index)
		n.call(nowNs, owner, MoveFetchTimeoutNs,
			func(id uint64) wire.Message {
				return wire.FetchRequest{ID: id, Incarnation: k.topicID, Partition: k.index,
					Epoch: epoch}
			},
			func(now int64, m wire.Message) { n.onReleaseProbe(now, r, m) })
	}
	return acted
}

// onReleaseProbe drops the old copy once the new owner serves the partition with every
// record this copy holds; else it asks again after MoveProbeIntervalNs.
func (n *Node) onReleaseProbe(nowNs int64, r *release, m wire.Message) {
	r.busy = false
	p := n.parts[r.key]
	resp, ok := m.(wire.FetchResponse)
	if n.moves.releases[r.key] != r || p == nil || !n.givenAway(r.key) {
		return
	}
	if !ok || resp.Code != wire.CodeOK || resp.HighWatermark < p.log.HighWatermark() ||
		resp.Oldest > p.log.OldestOffset() && resp.Oldest < p.log.HighWatermark() {
		r.afterNs = nowNs + MoveProbeIntervalNs
		return
	}
	delete(n.moves.releases, r.key)
	n.moves.stats.Released++
	n.dropPartition(r.key, fmt.Errorf("%w: partition %d moved to member %d", ErrNotReady,
		r.key.index, n.ownerOf(mustTopic(n, r.key.topicID), r.key.index)))
	n.reclaim.Request(nowNs)
}

func mustTopic(n *Node, id uint64) meta.Topic {
	t, _ := n.meta.TopicByID(id)
	return t
}
