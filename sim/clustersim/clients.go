package clustersim

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

type reqKind uint8

const (
	reqMembers reqKind = iota + 1
	reqCreate
	reqProduce
	reqConsume
	reqAck
	reqChurn
	reqGetTopic
)

// request is a client request waiting for its answer.
type request struct {
	client int
	kind   reqKind
	topic  string
	ids    []uint64
	callNs int64
}

// model is what the clients were told and saw.
type model struct {
	nextID    uint64
	produced  map[uint64][]byte
	acked     map[uint64]bool
	refused   map[uint64]bool
	churn     map[uint64]bool // ids produced to the churn topic
	delivered map[uint64]int
	seen      map[uint32]map[uint64]uint64 // partition -> offset -> id delivered there
	missing   int                          // acked and never delivered
}

func newModel() model {
	return model{churn: map[uint64]bool{}, produced: map[uint64][]byte{}, acked: map[uint64]bool{}, refused: map[uint64]bool{}, delivered: map[uint64]int{}, seen: map[uint32]map[uint64]uint64{}}
}

func (u *run) isProducer(c int) bool { return c < u.o.Producers }

// upNode draws a node that is up.
func (u *run) upNode() (int, bool) {
	var up []int
	for i, mb := range u.members {
		if mb.up {
			up = append(up, i)
		}
	}
	if len(up) == 0 {
		return 0, false
	}
	return up[u.r.Intn(len(up))], true
}

func (u *run) submit(i, client int, kind reqKind, ids []uint64, f func(n *node.Node, now int64, tok uint64)) {
	u.submitTo(i, client, kind, topic, ids, f)
}

// submitTo is submit for a request about topic name.
func (u *run) submitTo(i, client int, kind reqKind, name string, ids []uint64, f func(n *node.Node, now int64, tok uint64)) {
	mb := u.members[i]
	u.tokens++
	mb.pending[u.tokens] = request{client: client, kind: kind, topic: name, ids: ids, callNs: u.s.Now()}
	f(mb.n, u.nowOf(mb), u.tokens)
	u.drain(i)
}

// clientStep: before the topic exists, any client sets it up (once every node is a
// member, so that its partitions spread over all); then producers produce and consumers
// consume, each on a node drawn at random.
func (u *run) clientStep(c int) {
	i, ok := u.upNode()
	switch {
	case !ok || (u.healing && u.isProducer(c)):
		if ok || !u.healing {
			u.s.At(u.think()+u.o.RestartNs[0], event{kind: evClient, client: c})
		}
	case !u.ready:
		u.submit(i, c, reqMembers, nil, func(n *node.Node, now int64, tok uint64) { n.ListMembers(now, tok) })
	case u.isProducer(c):
		u.produce(i, c)
	default:
		max, wait, name := 1+u.r.Intn(10), int64(u.r.Intn(20_000_000)), u.pickTopic()
		u.record('C', uint64(c))
		u.submitTo(i, c, reqConsume, name, nil, func(n *node.Node, now int64, tok uint64) {
			n.Consume(now, tok, node.ConsumeRequest{Topic: name, Partition: -1, Max: max, WaitNs: wait})
		})
	}
}

func (u *run) produce(i, c int) {
	k, name := 1+u.r.Intn(4), u.pickTopic()
	msgs := make([]node.ProduceMessage, k)
	ids := make([]uint64, k)
	for j := range msgs {
		u.m.nextID++
		ids[j] = u.m.nextID
		rest := make([]byte, u.r.Intn(u.o.PayloadMax+1))
		u.r.Read(rest)
		p := invariants.MessagePayload(ids[j], rest)
		u.m.produced[ids[j]] = p
		u.m.churn[ids[j]] = name == churnTopic
		msgs[j] = node.ProduceMessage{Partition: -1, Payload: p}
	}
	u.stats.Produced += uint64(k)
	if u.o.SyncPercent > 0 && u.r.Intn(100) < u.o.SyncPercent {
		u.stats.Synchronous += uint64(k)
		u.record('S', uint64(c), uint64(k))
		u.submitTo(i, c, reqProduce, name, ids, func(n *node.Node, now int64, tok uint64) { n.ProduceSync(now, tok, name, msgs) })
		return
	}
	u.record('P', uint64(c), uint64(k))
	u.submitTo(i, c, reqProduce, name, ids, func(n *node.Node, now int64, tok uint64) { n.Produce(now, tok, name, msgs) })
}

func (u *run) onResponse(mb *member, resp node.Response) {
	req, ok := mb.pending[resp.Token]
	if !ok {
		u.violate(fmt.Errorf("node %d answered unknown token %d", mb.id, resp.Token))
		return
	}
	delete(mb.pending, resp.Token)
	switch req.kind {
	case reqMembers:
		u.onMembers(mb, req, resp)
		return
	case reqCreate:
		u.onCreated(mb, req, resp)
	case reqChurn:
		u.onChurned(resp)
		return
	case reqGetTopic:
		if resp.Err == nil {
			u.topicID = resp.Topic.ID
		}
	case reqProduce:
		u.onProduced(req, resp)
	case reqConsume:
		u.onConsumed(mb, req, resp)
	case reqAck:
		return
	}
	next := u.think()
	if resp.Err != nil {
		next += errorBackoffNs // a client backs off on errors (think time may be 0)
	}
	u.s.At(next, event{kind: evClient, client: req.client})
}

// errorBackoffNs is how long a client waits before retrying after an error answer.
const errorBackoffNs = 10_000_000

// onCreated: the main topic exists; the faults that need it start.
func (u *run) onCreated(mb *member, req request, resp node.Response) {
	if u.ready || (resp.Err != nil && !errors.Is(resp.Err, node.ErrTopicExists)) {
		return
	}
	u.ready = true
	if resp.Err == nil {
		u.topicID = resp.Topic.ID
	} else { // created by an earlier attempt: learn its id
		u.submit(int(mb.id-1), adminClient, reqGetTopic, nil, func(n *node.Node, now int64, tok uint64) { n.GetTopic(now, tok, topic) })
	}
	if u.o.OutageNs > 0 { // the outage hits a cluster at work
		u.s.At(u.s.Now()+u.o.OutageAtNs, event{kind: evOutage})
	}
	if u.o.ChurnGapNs[1] > 0 {
		u.s.At(u.after(u.o.ChurnGapNs), event{kind: evChurn})
	}
}

// onMembers creates the topic once every node is a live member.
func (u *run) onMembers(mb *member, req request, resp node.Response) {
	alive := 0
	for _, m := range resp.Members {
		if m.Alive {
			alive++
		}
	}
	if resp.Err != nil || alive < len(u.members) || u.ready {
		u.s.At(u.think()+10_000_000, event{kind: evClient, client: req.client})
		return
	}
	parts := u.o.Partitions
	u.submit(int(mb.id-1), req.client, reqCreate, nil, func(n *node.Node, now int64, tok uint64) {
		n.CreateTopic(now, tok, node.TopicSpec{Name: topic, Partitions: &parts})
	})
}

func (u *run) onProduced(req request, resp node.Response) {
	outcome := invariants.Ambiguous
	switch {
	case resp.Err == nil && req.topic == churnTopic: // may be discarded: see churn.go
		outcome = invariants.Accepted
		u.stats.Acked += uint64(len(req.ids))
	case resp.Err == nil:
		outcome = invariants.Accepted
		for _, id := range req.ids {
			if !u.m.acked[id] && u.m.delivered[id] == 0 {
				u.m.missing++
			}
			u.m.acked[id] = true
		}
		u.stats.Acked += uint64(len(req.ids))
	case node.Refused(resp.Err):
		outcome = invariants.Refused
		for _, id := range req.ids {
			u.m.refused[id] = true
		}
		u.stats.Refused += uint64(len(req.ids))
	default:
		u.stats.Ambiguous += uint64(len(req.ids))
	}
	if req.topic == churnTopic {
		outcome = churnOutcome(outcome)
	}
	for _, id := range req.ids {
		u.hist.Produce(id, req.callNs, u.s.Now(), outcome)
	}
}

// onConsumed checks every delivered message (invariant 3) and acks most of them (all
// while healing).
func (u *run) onConsumed(mb *member, req request, resp node.Response) {
	var settle []string
	for _, msg := range resp.Messages {
		id, ok := invariants.MessageID(msg.Payload)
		if !ok || !bytes.Equal(u.m.produced[id], msg.Payload) {
			u.violate(fmt.Errorf("invariant 3: node %d delivered a message never produced with these bytes (%q…)", mb.id, msg.Payload[:min(len(msg.Payload), 24)]))
			return
		}
		if u.m.refused[id] {
			u.violate(fmt.Errorf("node %d delivered message %d whose produce was definitely refused", mb.id, id))
			return
		}
		if msg.Topic == topic && !u.m.deliveredAt(msg.Partition, msg.Offset, id) {
			u.violate(fmt.Errorf("invariant 4: node %d delivered message %d at offset %d of partition %d, which delivered another message before", mb.id, id, msg.Offset, msg.Partition))
			return
		}
		if u.m.delivered[id] == 0 && u.m.acked[id] {
			u.m.missing--
		}
		u.m.delivered[id]++
		u.stats.Delivered++
		if u.m.delivered[id] > 1 {
			u.stats.Duplicates++
		}
		u.hist.Deliver(id, req.callNs, u.s.Now())
		if u.healing || u.r.Intn(10) < 8 {
			settle = append(settle, msg.ReceiptHandle)
		}
	}
	if len(settle) > 0 {
		u.submitTo(int(mb.id-1), req.client, reqAck, req.topic, nil, func(n *node.Node, now int64, tok uint64) {
			n.Ack(now, tok, req.topic, settle, node.AckSettle)
		})
	}
}

// loseRequests: the node died with these requests unanswered; produces are ambiguous.
func (u *run) loseRequests(mb *member) {
	for _, tok := range slices.Sorted(maps.Keys(mb.pending)) {
		req := mb.pending[tok]
		if req.kind == reqProduce {
			u.stats.Ambiguous += uint64(len(req.ids))
			for _, id := range req.ids {
				u.hist.Produce(id, req.callNs, u.s.Now(), invariants.Ambiguous)
			}
		}
		if req.kind != reqAck {
			u.s.At(u.think()+u.o.RestartNs[0], event{kind: evClient, client: req.client})
		}
	}
	mb.pending = map[uint64]request{}
}

// deliveredAt notes that offset of a partition delivered id; false if it delivered
// another message before.
func (m *model) deliveredAt(part uint32, offset, id uint64) bool {
	offs := m.seen[part]
	if offs == nil {
		offs = map[uint64]uint64{}
		m.seen[part] = offs
	}
	if prev, ok := offs[offset]; ok && prev != id {
		return false
	}
	offs[offset] = id
	return true
}
