package node

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/wire"
)

// Topic requests go through the metastore and are answered once applied locally.

// CreateTopic creates a topic; unset fields take the API's defaults.
func (n *Node) CreateTopic(nowNs int64, token uint64, spec TopicSpec) {
	n.propose(
		nowNs,
		token,
		meta.Command{
			Kind:                    meta.CreateTopic,
			Actor:                   spec.Actor,
			Name:                    spec.Name,
			Partitions:              spec.Partitions,
			RetentionMs:             spec.RetentionMs,
			VisibilityTimeoutMs:     spec.VisibilityTimeoutMs,
			MaxInFlightPerPartition: spec.MaxInFlightPerPartition,
		},
	)
}

// PatchTopic changes a topic; partitions only grow.
func (n *Node) PatchTopic(nowNs int64, token uint64, name string, p TopicPatch) {
	n.propose(
		nowNs,
		token,
		meta.Command{Kind: meta.PatchTopic, Actor: p.Actor, Name: name, Partitions: p.Partitions,
			RetentionMs: p.RetentionMs, VisibilityTimeoutMs: p.VisibilityTimeoutMs,
			MaxInFlightPerPartition: p.MaxInFlightPerPartition},
	)
}

// DeleteTopic deletes a topic. Its records still waiting in the WAL are discarded by
// the dispatcher only under the stale-replica defense.
func (n *Node) DeleteTopic(nowNs int64, token uint64, name string) {
	n.DeleteTopicAs(nowNs, token, meta.SystemActor, name)
}

// DeleteTopicAs is DeleteTopic asked by actor (checked by the metastore, as TopicSpec's).
func (n *Node) DeleteTopicAs(nowNs int64, token uint64, actor, name string) {
	n.propose(nowNs, token, meta.Command{Kind: meta.DeleteTopic, Actor: actor, Name: name})
}

func (n *Node) propose(nowNs int64, token uint64, cmd meta.Command) {
	defer n.collect(nowNs)
	n.checkToken(token)
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	if leader := n.meta.LeaderID(); leader != n.meta.ID() {
		n.forward(nowNs, token, leader, cmd)
		return
	}
	n.meta.Propose(nowNs, n.inflight.add(entry{purpose: forProposal, client: token}), cmd)
}

// onProposeDone answers the client and brings the partitions in line with the topic.
func (n *Node) onProposeDone(nowNs int64, d meta.ProposeDone) {
	if n.inflight.purposeOf(d.Token) == forPeerProposal {
		e, _ := n.inflight.take(d.Token, forPeerProposal)
		n.answerPeerProposal(e.proposal, d.Err)
		return
	}
	e, ok := n.inflight.take(d.Token, forProposal)
	if !ok {
		return
	}
	token := e.client
	if d.Err != nil {
		n.respond(Response{Token: token, Err: metaError(d.Err)})
		return
	}
	n.syncTopics()
	n.respond(Response{Token: token, Topic: apiTopic(d.Topic), User: apiUser(d.User)})
}

// syncTopics brings the open partitions in line with the replica's topics, whoever made
// the change (this node, a peer through the leader): lease settings of patched topics,
// and deleted incarnations dropped.
func (n *Node) syncTopics() {
	for _, t := range n.meta.Topics() {
		n.applyTopicSettings(t)
	}
	n.dropDeletedPartitions()
}

// applyTopicSettings pushes a patched topic's lease settings to its open partitions.
func (n *Node) applyTopicSettings(t meta.Topic) {
	for _, pk := range n.partKeys {
		if pk.topicID == t.ID {
			p := n.parts[pk]
			p.leases.SetVisibilityTimeout(t.VisibilityTimeoutMs * 1_000_000)
			p.leases.SetMaxInFlight(int(t.MaxInFlightPerPartition))
		}
	}
}

// dropDeletedPartitions forgets the open partitions of incarnations that no longer
// exist. Their files stay on disk (reclaiming them is future work); their ops in flight
// complete into nothing.
func (n *Node) dropDeletedPartitions() {
	for _, pk := range slices.Clone(n.partKeys) {
		if _, ok := n.meta.TopicByID(pk.topicID); !ok {
			n.dropPartition(pk, ErrTopicNotFound)
		}
	}
}

// dropPartition forgets open partition pk (its topic deleted, or its copy given away or
// no longer wanted: move.go): the consumes waiting on it are answered cause, its commits
// are answered errPartitionDropped, and its ops in flight complete into nothing.
func (n *Node) dropPartition(pk partKey, cause error) {
	p := n.parts[pk]
	delete(n.parts, pk)
	n.partKeys = slices.DeleteFunc(n.partKeys, func(k partKey) bool { return k == pk })
	for _, tok := range p.consumers {
		if op := n.consumes[tok]; op != nil && op.parked {
			delete(n.consumes, tok)
			n.respond(Response{Token: tok, Err: cause})
		}
	}
	if p.inflight != nil { // its log's answer never comes: the commit ends here
		n.inflight.take(p.commitTok, forCommit)
	}
	for _, job := range p.inflight {
		n.finishCommit(0, job, plog.CommitDone{}, errPartitionDropped)
	}
	for _, job := range p.queued {
		n.finishCommit(0, job, plog.CommitDone{}, errPartitionDropped)
	}
	n.abandonReads(pk, cause)
}

// abandonReads answers the consumes waiting for reads of a dropped partition: those reads
// complete into nothing, so the consumes would otherwise wait forever. A fetch reading
// it is given up (its destination asks again).
func (n *Node) abandonReads(pk partKey, cause error) {
	ofPart := func(e *entry) bool { return e.read.part == pk }
	for _, id := range n.inflight.ids(forRead, ofPart) {
		e, _ := n.inflight.take(id, forRead)
		op := e.read.op
		if _, waiting := n.consumes[op.token]; waiting {
			delete(n.consumes, op.token)
			n.respond(Response{Token: op.token, Err: cause})
		}
	}
	for _, id := range n.inflight.ids(forFetchRead, func(e *entry) bool { return e.part == pk }) {
		n.inflight.take(id, forFetchRead)
	}
}

var errPartitionDropped = errors.New("node: partition dropped with its topic")

func metaError(err error) error {
	switch {
	case errors.Is(err, meta.ErrForbidden):
		return ErrForbidden
	case errors.Is(err, meta.ErrUserExists):
		return ErrUserExists
	case errors.Is(err, meta.ErrUserNotFound):
		return ErrUserNotFound
	case errors.Is(err, meta.ErrNoMember):
		return ErrMemberNotFound
	case isRefusal(err):
		return fmt.Errorf("%w: %v", ErrRefused, err)
	case errors.Is(err, meta.ErrNoMove):
		return fmt.Errorf("%w: %v", ErrMoveNotFound, err)
	case errors.Is(err, meta.ErrNotFound):
		return ErrTopicNotFound
	case errors.Is(err, meta.ErrExists):
		return ErrTopicExists
	case errors.Is(err, meta.ErrInvalid), errors.Is(err, meta.ErrTooManyTopics):
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	case errors.Is(err, meta.ErrBusy):
		return fmt.Errorf("%w: %v", ErrBusy, err)
	case errors.Is(err, meta.ErrNotLeader), errors.Is(err, meta.ErrTimeout):
		return fmt.Errorf("%w: %v", ErrNotReady, err)
	}
	return fmt.Errorf("%w: %v", ErrMetastoreFailed, err)
}

func apiTopic(t meta.Topic) Topic {
	return Topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions, RetentionMs: t.RetentionMs,
		VisibilityTimeoutMs: t.VisibilityTimeoutMs, MaxInFlightPerPartition: t.MaxInFlightPerPartition,
		CreatedAtMs: t.CreatedAtMs}
}

// GetTopic answers a topic with its partitions' stats (opening this node's partitions as
// needed: those still recovering show zeros). The stats of a partition another member
// owns come from the owner (route.go); one that does not answer in time, or answers for
// another incarnation of the name, shows zeros.
func (n *Node) GetTopic(nowNs int64, token uint64, name string) {
	defer n.collect(nowNs)
	t, ok := n.readyTopic(token, name)
	if !ok {
		return
	}
	stats := make([]PartitionStats, t.Partitions)
	for i := range stats {
		stats[i] = PartitionStats{Index: uint32(i), OwnerNode: n.ownerName(t, uint32(i))}
	}
	for _, ps := range n.localStats(nowNs, t) {
		stats[ps.Index] = fillStats(stats[ps.Index], ps)
	}
	n.remoteStats(nowNs, token, t, stats)
}

// localStats are the stats of this node's partitions of t.
func (n *Node) localStats(nowNs int64, t meta.Topic) []wire.PartitionStat {
	var out []wire.PartitionStat
	for i := range t.Partitions {
		if k := (partKey{t.ID, i}); n.ownerOf(t, i) != n.meta.ID() || n.copyBlocks(k) || n.frozenHere(k) {
			continue // not served here (a frozen source's high-watermark may be behind the new owner's)
		}
		ps := wire.PartitionStat{Index: i}
		p := n.partitionFor(nowNs, t, i)
		ps.Failed = p.failed != nil
		if p.ready() {
			ps.HighWatermark, ps.OldestOffset = statsHighWatermark(p), p.log.OldestOffset()
			ps.SizeBytes, ps.InFlight = uint64(p.log.SizeBytes()), uint32(p.leases.InFlight())
		}
		out = append(out, ps)
	}
	return out
}

func fillStats(s PartitionStats, ps wire.PartitionStat) PartitionStats {
	s.HighWatermark, s.NextOffset, s.OldestOffset = ps.HighWatermark, ps.HighWatermark, ps.OldestOffset
	s.SizeBytes, s.InFlight, s.Failed = int64(ps.SizeBytes), int(ps.InFlight), ps.Failed
	return s
}

// ownerName names a partition's owner: this node's name (NodeID) when it owns it, the
// owner's member id otherwise.
func (n *Node) ownerName(t meta.Topic, index uint32) string {
	if o := n.ownerOf(t, index); o != n.meta.ID() || n.cfg.NodeID == "" {
		return strconv.FormatUint(o, 10)
	}
	return n.cfg.NodeID
}

// ListTopics answers up to limit topics whose names sort after after.
func (n *Node) ListTopics(nowNs int64, token uint64, limit int, after string) {
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	all := n.meta.Topics() // sorted by name
	i, _ := slices.BinarySearchFunc(all, after, func(t meta.Topic, name string) int {
		switch {
		case t.Name < name:
			return -1
		case t.Name > name:
			return 1
		}
		return 0
	})
	if i < len(all) && all[i].Name == after {
		i++
	}
	var out []Topic
	for ; i < len(all) && len(out) < limit; i++ {
		out = append(out, apiTopic(all[i]))
	}
	next := ""
	if i < len(all) && len(out) > 0 {
		next = out[len(out)-1].Name
	}
	n.respond(Response{Token: token, Topics: out, NextPage: next})
}

// readyTopic looks up a topic for a client request; when the node is not ready or the
// topic does not exist it answers the request and returns false.
func (n *Node) readyTopic(token uint64, name string) (meta.Topic, bool) {
	n.checkToken(token)
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
		return meta.Topic{}, false
	}
	t, ok := n.meta.Topic(name)
	if !ok {
		n.respond(Response{Token: token, Err: ErrTopicNotFound})
	}
	return t, ok
}
