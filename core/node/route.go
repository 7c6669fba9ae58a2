package node

import (
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/wire"
)

// RouteTimeoutNs is how long a routed consume (past its wait) or ack waits for the owner.
const RouteTimeoutNs = 5_000_000_000

// remoteOwners lists the other live members owning partitions of t, ascending.
func (n *Node) remoteOwners(t meta.Topic) []uint64 {
	set := map[uint64]bool{}
	for _, o := range n.meta.Owners(t.ID) {
		if o != n.meta.ID() && !n.meta.MemberDead(o) {
			set[o] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func wireConsume(id uint64, req ConsumeRequest) wire.ConsumeRequest {
	return wire.ConsumeRequest{
		Actor:     req.Actor,
		ID:        id,
		Topic:     req.Topic,
		Partition: req.Partition,
		Max:       uint16(req.Max),
		WaitNs:    max(req.WaitNs, 0),
		HasOffset: req.HasOffset,
		Offset:    req.Offset,
	}
}

// consumeAt routes a consume of one partition of t to its owner.
func (n *Node) consumeAt(nowNs int64, token, owner uint64, t meta.Topic, req ConsumeRequest) {
	n.call(nowNs, owner, req.WaitNs+RouteTimeoutNs,
		func(id uint64) wire.Message { return wireConsume(id, req) },
		func(now int64, m wire.Message) {
			msgs, foreign, err := consumeAnswer(t, m)
			n.release(now, owner, t, foreign)
			n.respond(Response{Token: token, Messages: msgs, Err: err})
		})
}

// consumeGroup is a consume of any partition, asked of this node and the other owners.
type consumeGroup struct {
	token    uint64 // the client's
	topic    meta.Topic
	pending  int
	done     bool
	localTok uint64
	err      error // this node's error, answered when nobody has records
	asked    []*groupAsk
}

// groupAsk is one owner's part of a spread consume: the call's wire id, and whether the
// owner answered it.
type groupAsk struct {
	owner, id uint64
	answered  bool
}

// consumeSpread serves a consume of any partition from whichever owner has records
// first: this node's partitions, and a routed consume to every other live owner. Records
// that arrive after the answer was given are released at once (deliverable again).
func (n *Node) consumeSpread(nowNs int64, token uint64, t meta.Topic, req ConsumeRequest) {
	g := &consumeGroup{token: token, topic: t, pending: 1}
	self := n.meta.ID()
	g.localTok = n.internal(
		func(now int64, r Response) { n.groupAnswer(now, g, self, r.Messages, r.Err) },
	)
	if op := n.consumeLocal(nowNs, g.localTok, t, req); len(op.receipts) > 0 {
		return // records here already: nobody else is asked
	}
	for _, owner := range n.remoteOwners(t) {
		g.pending++
		ask := &groupAsk{owner: owner}
		g.asked = append(g.asked, ask)
		n.call(nowNs, owner, req.WaitNs+RouteTimeoutNs,
			func(id uint64) wire.Message {
				ask.id = id
				return wireConsume(id, req)
			},
			func(now int64, m wire.Message) {
				ask.answered = true
				msgs, foreign, _ := consumeAnswer(t, m) // an owner that fails is as one with nothing
				n.release(now, owner, t, foreign)
				n.groupAnswer(now, g, owner, msgs, nil)
			})
	}
}

// groupAnswer takes one owner's answer to a spread consume.
func (n *Node) groupAnswer(nowNs int64, g *consumeGroup, from uint64, msgs []Message, err error) {
	g.pending--
	if g.done {
		n.release(nowNs, from, g.topic, msgs)
		return
	}
	if err != nil {
		g.err = err
	}
	if len(msgs) > 0 || g.pending == 0 {
		g.done = true
		r := Response{Token: g.token, Messages: msgs}
		if len(msgs) == 0 {
			r.Err = g.err
		}
		n.respond(r)
		n.dropParked(g.localTok)
		n.cancelAsked(g)
	}
}

// cancelAsked tells the owners that have not answered a spread consume answered
// otherwise that it is: each ends its part now instead of leasing records for it when
// they come, which this node would only release (wire.ConsumeCancel).
func (n *Node) cancelAsked(g *consumeGroup) {
	for _, a := range g.asked {
		if !a.answered && !mutNoConsumeCancel {
			n.send(a.owner, wire.ConsumeCancel{ID: a.id})
		}
	}
}

// dropParked forgets this node's part of a spread consume if it still waits for records
// (one reading records it leased answers, and groupAnswer releases them).
func (n *Node) dropParked(tok uint64) {
	if op := n.consumes[tok]; op != nil && op.parked {
		delete(n.consumes, tok)
		n.inflight.take(tok, forInternal)
	}
}

// release makes records leased for an answer already given deliverable again.
func (n *Node) release(nowNs int64, owner uint64, t meta.Topic, msgs []Message) {
	var handles []string
	for _, m := range msgs {
		if m.ReceiptHandle != "" { // a replay leases nothing
			handles = append(handles, m.ReceiptHandle)
		}
	}
	if len(handles) == 0 {
		return
	}
	if owner == n.meta.ID() {
		for _, h := range handles {
			_ = n.ackOne(nowNs, t.ID, h, AckRelease) // a lease already gone needs nothing
		}
		return
	}
	n.call(nowNs, owner, RouteTimeoutNs,
		func(id uint64) wire.Message {
			return wire.AckRequest{ID: id, Topic: t.Name, Mode: uint8(AckRelease), Handles: handles}
		},
		func(int64, wire.Message) {}) // its leases expire anyway if this is lost
}

// consumeAnswer reads an owner's ConsumeResponse (nil: no answer in time) to a consume of
// t. Records of another incarnation than t.ID (the owner's replica and this one disagree
// on the name, around a delete and a create) are not delivered: an ack of them here
// resolves the name to t and would answer 410 while their leases live (cluster seed
// 108502). They come back as foreign, for the caller to release at the owner, and the
// answer is ErrNotReady (a retry finds the replicas agreeing).
func consumeAnswer(t meta.Topic, m wire.Message) (msgs, foreign []Message, err error) {
	r, ok := m.(wire.ConsumeResponse)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the partition's owner did not answer", ErrNotReady)
	}
	if r.Status != wire.StatusOK {
		return nil, nil, statusError(r.Status, r.Reason)
	}
	msgs = make([]Message, len(r.Messages))
	for i, d := range r.Messages {
		msgs[i] = Message{
			Topic:         t.Name,
			TopicID:       r.TopicID,
			Partition:     d.Partition,
			Offset:        d.Offset,
			Key:           d.Key,
			HasKey:        d.HasKey,
			Payload:       d.Payload,
			TimestampMs:   d.TimestampMs,
			ReceiptHandle: d.Handle,
		}
	}
	if r.TopicID != 0 && r.TopicID != t.ID && !mutForeignConsume {
		return nil, msgs, fmt.Errorf(
			"%w: the partition's owner holds another incarnation of the topic",
			ErrNotReady,
		)
	}
	return msgs, nil, nil
}

// remoteStats asks every other live owner of t for its partitions' stats, fills them in
// and answers; an owner that does not answer within RouteTimeoutNs leaves zeros, and so
// does one whose answer is not of incarnation t.ID. The request names the topic only, and
// the two replicas may disagree on its incarnation after a delete and a create under the
// same name: the owner's stats of the other incarnation, shown under t.ID, would be a high
// watermark that falls (cluster seed 582). An owner built before kind 15 names none, and
// shows zeros too.
func (n *Node) remoteStats(nowNs int64, token uint64, t meta.Topic, stats []PartitionStats) {
	owners := n.remoteOwners(t)
	pending := len(owners)
	if pending == 0 {
		n.respond(Response{Token: token, Topic: apiTopic(t), Stats: stats})
		return
	}
	for _, owner := range owners {
		n.call(nowNs, owner, RouteTimeoutNs,
			func(id uint64) wire.Message { return wire.StatsRequest{ID: id, Topic: t.Name} },
			func(_ int64, m wire.Message) {
				if r, ok := m.(wire.StatsResponse); ok && r.Status == wire.StatusOK && r.TopicID == t.ID {
					for _, ps := range r.Partitions {
						if ps.Index < t.Partitions && n.ownerOf(t, ps.Index) == owner {
							stats[ps.Index] = fillStats(stats[ps.Index], ps)
						}
					}
				}
				if pending--; pending == 0 {
					n.respond(Response{Token: token, Topic: apiTopic(t), Stats: stats})
				}
			})
	}
}

// PartitionOwner is the member owning partition index of incarnation topicID in this
// node's replica (false: the replica does not know the incarnation's owners). Owners are
// fixed when a topic is created; the simulators ask it to tell a lease lost with its
// owner's crash from one broken.
func (n *Node) PartitionOwner(topicID uint64, index uint32) (uint64, bool) {
	if owners := n.meta.Owners(topicID); int(index) < len(owners) {
		return owners[index], true
	}
	return 0, false
}
