package nodesim

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

type reqKind uint8

const (
	reqCreate reqKind = iota + 1
	reqProduce
	reqConsume
	reqAck
	reqGetTopic
)

// request is a client request waiting for its response.
type request struct {
	client int
	kind   reqKind
	ids    []uint64 // produce: the message ids it carries
	topic  int
	callNs int64 // when it was sent
}

func (u *run) submit(client int, kind reqKind, topic int, ids []uint64, f func(now int64, tok uint64)) {
	u.nextTok++
	u.pending[u.nextTok] = request{client: client, kind: kind, ids: ids, topic: topic, callNs: u.s.Now()}
	f(u.s.Now(), u.nextTok)
	u.drain()
}

// setupRetryNs is the wait before a topic create the node refused is tried again.
const setupRetryNs = 10_000_000

// maybeSetup creates the topics once the node is ready (and again after a crash if the
// creates were lost).
func (u *run) maybeSetup() {
	if u.setup || !u.up || u.n.IsReady() != nil || u.creating() || u.s.Now() < u.setupRetryAt {
		return
	}
	if len(u.topics) == u.o.Topics {
		u.setup = true
		return
	}
	i := len(u.topics)
	parts := uint32(1 + u.r.Intn(u.o.PartitionsMax))
	vis := u.o.VisibilityMs
	u.submit(-1, reqCreate, i, nil, func(now int64, tok uint64) {
		u.n.CreateTopic(now, tok, node.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: &parts, VisibilityTimeoutMs: &vis})
	})
}

func (u *run) creating() bool {
	for _, tok := range sortedKeys(u.pending) {
		if k := u.pending[tok].kind; k == reqCreate || k == reqGetTopic {
			return true
		}
	}
	return false
}

// clientStep is one client's next request, or a wait while the node is down.
func (u *run) clientStep(c int) {
	if !u.setup || !u.up || u.n.IsReady() != nil {
		if !(u.healing && c < u.o.Producers) {
			u.s.At(u.think()+u.o.RestartNs/4+1, event{kind: evClient, client: c})
		}
		return
	}
	if c < u.o.Producers {
		if !u.healing {
			u.produce(c)
		}
		return
	}
	u.consume(c)
}

func (u *run) produce(c int) {
	ti := u.r.Intn(len(u.topics))
	t := u.topics[ti]
	k := 1 + u.r.Intn(u.o.BatchMax)
	msgs := make([]node.ProduceMessage, k)
	ids := make([]uint64, k)
	for i := range msgs {
		id, payload := u.m.newMessage(u)
		ids[i] = id
		msgs[i] = node.ProduceMessage{Partition: -1, Payload: payload}
		switch u.r.Intn(5) {
		case 0:
			msgs[i].Partition = int64(u.r.Intn(int(t.parts)))
		case 1, 2:
			msgs[i].HasKey, msgs[i].Key = true, []byte(fmt.Sprintf("k%d", u.r.Intn(10)))
		}
	}
	u.stats.Produced += uint64(k)
	u.record('P', uint64(c), uint64(k))
	u.submit(c, reqProduce, ti, ids, func(now int64, tok uint64) { u.n.Produce(now, tok, t.name, msgs) })
}

func (u *run) consume(c int) {
	ti := u.r.Intn(len(u.topics))
	req := node.ConsumeRequest{Topic: u.topics[ti].name, Partition: -1, Max: 1 + u.r.Intn(10)}
	if u.r.Chance(0.5) {
		req.WaitNs = int64(u.r.Range(1_000_000, 30_000_000))
	}
	u.record('C', uint64(c), uint64(req.Max))
	u.submit(c, reqConsume, ti, nil, func(now int64, tok uint64) { u.n.Consume(now, tok, req) })
}

// onResponse updates the model with an answer and schedules the client's next step.
func (u *run) onResponse(resp node.Response) {
	req, ok := u.pending[resp.Token]
	if !ok {
		u.violate(fmt.Errorf("response to unknown token %d", resp.Token))
		return
	}
	delete(u.pending, resp.Token)
	switch req.kind {
	case reqCreate:
		u.onCreated(req, resp)
		return
	case reqGetTopic:
		u.onGotTopic(resp)
		return
	case reqProduce:
		u.onProduced(req, resp)
	case reqConsume:
		u.onConsumed(req, resp)
	case reqAck:
		u.record('K', boolBit(resp.Err != nil))
		return // acks are fire-and-forget for the consumer's loop
	}
	if !(u.healing && req.client < u.o.Producers) {
		u.s.At(u.think(), event{kind: evClient, client: req.client})
	}
}

func (u *run) onCreated(req request, resp node.Response) {
	u.record('T', boolBit(resp.Err != nil))
	if resp.Err != nil && !errors.Is(resp.Err, node.ErrTopicExists) {
		// Retry later, not from inside this response (a synchronous refusal would recurse).
		u.setupRetryAt = u.s.Now() + setupRetryNs
		u.s.At(u.setupRetryAt, event{kind: evSetup})
	}
	switch {
	case resp.Err == nil:
		u.topics = append(u.topics, topicInfo{name: resp.Topic.Name, id: resp.Topic.ID, parts: resp.Topic.Partitions})
	case errors.Is(resp.Err, node.ErrTopicExists):
		// The create went through before a crash lost its answer: look the topic up.
		name := fmt.Sprintf("t%d", req.topic)
		u.submit(-1, reqGetTopic, req.topic, nil, func(now int64, tok uint64) { u.n.GetTopic(now, tok, name) })
	}
}

func (u *run) onGotTopic(resp node.Response) {
	u.record('G', boolBit(resp.Err != nil))
	if resp.Err != nil {
		u.setupRetryAt = u.s.Now() + setupRetryNs
		u.s.At(u.setupRetryAt, event{kind: evSetup})
		return
	}
	u.topics = append(u.topics, topicInfo{name: resp.Topic.Name, id: resp.Topic.ID, parts: resp.Topic.Partitions})
}

func (u *run) onProduced(req request, resp node.Response) {
	u.record('p', uint64(len(req.ids)), boolBit(resp.Err != nil))
	outcome := invariants.Ambiguous
	switch {
	case resp.Err == nil:
		outcome = invariants.Accepted
		for _, id := range req.ids {
			u.m.ack(id)
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
	for _, id := range req.ids {
		u.hist.Produce(id, req.callNs, u.s.Now(), outcome)
	}
}

// loseRequests: the process died with these requests unanswered.
func (u *run) loseRequests() {
	for _, tok := range sortedKeys(u.pending) {
		req := u.pending[tok]
		delete(u.pending, tok)
		if req.kind == reqProduce {
			u.stats.Ambiguous += uint64(len(req.ids))
			for _, id := range req.ids {
				u.hist.Produce(id, req.callNs, u.s.Now(), invariants.Ambiguous)
			}
		}
		if req.client >= 0 && req.kind != reqAck && !(u.healing && req.client < u.o.Producers) {
			u.s.At(u.think()+u.o.RestartNs, event{kind: evClient, client: req.client})
		}
	}
}
