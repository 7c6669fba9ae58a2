package node

import (
	"errors"
	"slices"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/core/wire"
)

// Commits reach a partition's owner: this node's own partitions take commits from its
// dispatcher and, as CommitRequest messages, from its peers' dispatchers; a partition
// owned elsewhere gets this node's dispatcher commits as CommitRequests, answered by
// CommitResponses. Messages are best effort: a commit whose send failed (SendFailed), or
// whose connection ended (PeerReset) or whose owner restarted (a Hello), fails at once and
// is sent again after the dispatcher's backoff; one whose answer never comes otherwise
// times out in the dispatcher (30 s) and is sent again (a duplicate, never a loss).

// commitJob is a commit for one of this node's partitions.
type commitJob struct {
	from    uint64 // 0: this node (done, else the dispatcher); else the peer that asked
	id      uint64 // the dispatcher commit id, or the peer's request id
	entries []plog.Entry
	done    func(nowNs int64, err error) // set for a synchronous produce's commit
	copy    bool                         // a move's copy (move.go), not a commit of new records
}

// remoteCommit is a dispatcher commit sent to a peer.
type remoteCommit struct {
	dispID uint64
	sentNs int64
}

// errRemoteRetry: the owner could not take the commit now (not ready, not the owner any
// more, or its commit failed); the dispatcher backs off and sends it again.
var errRemoteRetry = errors.New("node: the partition's owner asks for a retry")

// ownerOf is the member that owns partition index of t: this node when the topic's
// partitions have no owners (created before any member joined, or a single node).
func (n *Node) ownerOf(t meta.Topic, index uint32) uint64 {
	if owners := n.meta.Owners(t.ID); int(index) < len(owners) {
		return owners[index]
	}
	return n.meta.ID()
}

// routeCommit sends a dispatcher commit to its partition's owner. The owner checks the
// incarnation: a record of a deleted or recreated topic is refused with ErrIncarnation,
// and the dispatcher goes the discard way.
func (n *Node) routeCommit(nowNs int64, c dispatch.Commit) {
	t, ok := n.meta.TopicByID(c.Key.Incarnation)
	if mutNoIncarnation {
		t, ok = n.meta.Topic(c.Key.Topic)
	}
	if !ok || t.Name != c.Key.Topic || c.Key.Partition >= t.Partitions ||
		mutDropReassigned && n.meta.PartitionEpoch(t.ID, c.Key.Partition) > 0 {
		n.disp.CommitDone(nowNs, c.ID, dispatch.ErrIncarnation)
		return
	}
	if owner := n.ownerOf(t, c.Key.Partition); owner != n.meta.ID() {
		n.sendCommit(nowNs, owner, c)
		return
	}
	n.enqueueCommit(nowNs, t, c.Key.Partition, commitJob{id: c.ID, entries: entriesOf(c.Records)})
}

func entriesOf(recs []wal.Record) []plog.Entry {
	es := make([]plog.Entry, len(recs))
	for i, r := range recs {
		es[i] = plog.Entry{Key: r.Key, HasKey: r.HasKey, Payload: r.Payload}
	}
	return es
}

// sendCommit asks owner to commit c (inflight.go: its id is a peer request's).
func (n *Node) sendCommit(nowNs int64, owner uint64, c dispatch.Commit) {
	id := n.peerID(entry{purpose: forRemoteCommit, peer: owner,
		remote: remoteCommit{dispID: c.ID, sentNs: nowNs}})
	recs := make([]wire.Record, len(c.Records))
	for i, r := range c.Records {
		recs[i] = wire.Record{HasKey: r.HasKey, Key: r.Key, Payload: r.Payload}
	}
	n.send(
		owner,
		wire.CommitRequest{
			ID:          id,
			Topic:       c.Key.Topic,
			Incarnation: c.Key.Incarnation,
			Partition:   c.Key.Partition,
			Records:     recs,
		},
	)
}

// enqueueCommit queues a commit on one of this node's partitions and starts it if the
// partition is idle: one commit in flight per partition, whoever sent it.
func (n *Node) enqueueCommit(nowNs int64, t meta.Topic, index uint32, job commitJob) {
	if n.copyBlocks(partKey{t.ID, index}) { // an old copy's files are being removed (move.go)
		n.finishCommit(nowNs, job, plog.CommitDone{}, errMoving)
		return
	}
	p := n.partitionFor(nowNs, t, index)
	p.queued = append(p.queued, job)
	n.startQueued(nowNs, p)
}

// mergedCommitBytesMax bounds the key and payload bytes of the jobs one log commit takes
// together (a single job may be larger: it came within the dispatcher's 8 MiB bound).
const mergedCommitBytesMax = 8 << 20

// startQueued starts the partition's next commit when it is ready and idle. Jobs queued
// meanwhile (from this node's dispatcher and its peers') go together in one log commit,
// one fdatasync and one read-back, each answered with its own offsets.
func (n *Node) startQueued(nowNs int64, p *partition) bool {
	if p.failed != nil && len(p.queued) > 0 { // a failed partition refuses them (poison.go)
		queued := p.queued
		p.queued = nil
		for _, job := range queued {
			n.finishCommit(nowNs, job, plog.CommitDone{}, p.failed)
		}
		return true
	}
	if len(p.queued) > 0 && n.frozenHere(p.key) { // moving: the destination takes them
		queued := p.queued
		p.queued = nil
		for _, job := range queued {
			if mutFrozenDrop {
				n.finishCommit(nowNs, job, plog.CommitDone{Count: len(job.entries)}, nil)
				continue
			}
			n.finishCommit(nowNs, job, plog.CommitDone{}, errMoving)
		}
		return true
	}
	if !p.ready() || p.inflight != nil || len(p.queued) == 0 {
		return false
	}
	take, size, count := 0, 0, 0
	for take < len(p.queued) {
		s, c := jobBytes(p.queued[take]), len(p.queued[take].entries)
		if take > 0 && (size+s > mergedCommitBytesMax || count+c > plog.EntriesMax) {
			break
		}
		size, count = size+s, count+c
		take++
	}
	jobs := slices.Clone(p.queued[:take])
	p.queued = p.queued[take:]
	entries := jobs[0].entries
	if take > 1 {
		entries = make([]plog.Entry, 0, count)
		for _, j := range jobs {
			entries = append(entries, j.entries...)
		}
	}
	n.counts.partCommits++
	n.counts.commitJobs += uint64(len(jobs))
	id := n.inflight.add(entry{purpose: forCommit, part: p.key})
	p.inflight, p.commitTok, p.commitAt = jobs, id, nowNs
	p.log.Commit(nowNs, id, entries)
	return true
}

func jobBytes(j commitJob) int {
	n := 0
	for _, e := range j.entries {
		n += len(e.Key) + len(e.Payload)
	}
	return n
}

// onCommitDone: the records are durable and verified (or not). Visibility moves with the
// high-watermark; waiting consumers are woken.
func (n *Node) onCommitDone(nowNs int64, p *partition, c plog.CommitDone) {
	jobs := p.inflight
	assert.That(
		jobs != nil && c.Token == p.commitTok,
		"node: a commit answer with no commit in flight",
	)
	e, ok := n.inflight.take(c.Token, forCommit)
	assert.That(ok && e.part == p.key, "node: a commit answer from another partition's log")
	p.inflight, p.commitTok = nil, 0
	n.counts.commitLatency.Observe(nowNs - p.commitAt)
	if c.Err == nil {
		p.leases.SetHighWatermark(p.log.HighWatermark())
		p.failures = 0
		if f := n.cfg.OnPartitionCommit; f != nil && !jobs[0].copy {
			f(p.key.topicID, p.key.index, n.meta.PartitionEpoch(p.key.topicID, p.key.index),
				c.BaseOffset, c.Count)
		}
	}
	base := c.BaseOffset
	for _, job := range jobs { // each job's records, in order, from the commit's base
		if f := n.cfg.OnLocalCommit; f != nil && c.Err == nil && job.from == 0 && job.done == nil &&
			!job.copy {
			f(job.entries)
		}
		done := plog.CommitDone{Token: c.Token, BaseOffset: base, Count: len(job.entries), Err: c.Err}
		base += uint64(len(job.entries))
		n.finishCommit(nowNs, job, done, c.Err)
	}
	if c.Err == nil {
		n.wakeConsumers(nowNs, p)
	}
}

// finishCommit answers a commit job: to a synchronous produce, the dispatcher, or the
// peer that sent it.
func (n *Node) finishCommit(nowNs int64, job commitJob, done plog.CommitDone, err error) {
	if job.done != nil {
		job.done(nowNs, err)
		return
	}
	if job.from == 0 {
		if n.disp != nil {
			n.disp.CommitDone(nowNs, job.id, dispatchError(err))
		}
		return
	}
	resp := wire.CommitResponse{
		ID:         job.id,
		Code:       wire.CodeOK,
		BaseOffset: done.BaseOffset,
		Count:      uint32(done.Count),
	}
	switch {
	case errors.Is(err, errPartitionDropped):
		resp = wire.CommitResponse{ID: job.id, Code: wire.CodeIncarnation}
	case partitionFailure(err):
		resp = wire.CommitResponse{ID: job.id, Code: wire.CodePartitionFailed}
	case err != nil:
		resp = wire.CommitResponse{ID: job.id, Code: wire.CodeRetry}
	}
	n.send(job.from, resp)
}

// onCommitRequest takes a peer's commit for a partition this node should own.
func (n *Node) onCommitRequest(nowNs int64, from uint64, m wire.CommitRequest) {
	refuse := func(code wire.Code) { n.send(from, wire.CommitResponse{ID: m.ID, Code: code}) }
	if n.seenRequest(nowNs, from, wire.KindCommitRequest, m.ID) {
		return // a copy the network delivered again: its first copy is (being) answered
	}
	if n.failed != nil || !n.walReady || !n.metaReady {
		refuse(wire.CodeRetry)
		return
	}
	t, ok := n.meta.TopicByID(m.Incarnation)
	if mutNoIncarnation {
		t, ok = n.meta.Topic(m.Topic)
	}
	switch {
	case !ok || t.Name != m.Topic || m.Partition >= t.Partitions:
		refuse(wire.CodeIncarnation)
		return
	case n.ownerOf(t, m.Partition) != n.meta.ID():
		refuse(wire.CodeNotOwner)
		return
	}
	es := make([]plog.Entry, len(m.Records))
	for i, r := range m.Records {
		es[i] = plog.Entry{Key: r.Key, HasKey: r.HasKey, Payload: r.Payload}
	}
	n.enqueueCommit(nowNs, t, m.Partition, commitJob{from: from, id: m.ID, entries: es})
}

// onCommitResponse takes the owner's answer to a commit this node sent.
func (n *Node) onCommitResponse(nowNs int64, from uint64, m wire.CommitResponse) {
	id, ok := n.inflight.peerEntry(m.ID, forRemoteCommit, from)
	if !ok {
		n.answered(nowNs, from, m.ID, m) // a synchronous produce's commit (a call), if any
		return
	}
	e, _ := n.inflight.take(id, forRemoteCommit)
	var err error
	switch m.Code {
	case wire.CodeOK:
	case wire.CodeIncarnation:
		err = dispatch.ErrIncarnation
	case wire.CodePartitionFailed:
		err = dispatch.ErrPartitionFailed
	default:
		err = errRemoteRetry
	}
	if n.disp != nil {
		n.disp.CommitDone(nowNs, e.remote.dispID, err)
	}
}

// failRemote fails the remote commit with wireID sent to owner, if it is still open: the
// dispatcher backs off and sends its records again. An id that is not a dispatcher
// commit's may be a synchronous produce's (a call).
func (n *Node) failRemote(nowNs int64, wireID, owner uint64) {
	id, ok := n.inflight.peerEntry(wireID, forRemoteCommit, owner)
	if !ok {
		n.failCall(nowNs, wireID, owner)
		return
	}
	e, _ := n.inflight.take(id, forRemoteCommit)
	n.remoteFailed(nowNs, e.remote)
}

// remoteFailed hands a failed remote commit back to the dispatcher.
func (n *Node) remoteFailed(nowNs int64, rc remoteCommit) {
	if n.disp != nil {
		n.disp.CommitDone(nowNs, rc.dispID, errRemoteRetry)
	}
}

// commitTimeout is the dispatcher's commit timeout.
func (n *Node) commitTimeout() int64 {
	if t := n.cfg.Dispatch.CommitTimeoutNs; t > 0 {
		return t
	}
	return dispatch.DefaultCommitTimeoutNs
}
