package nodesim

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/sim/sched"
)

type reqKind uint8

const (
	reqCreate reqKind = iota + 1
	reqProduce
	reqConsume
	reqAck
	reqGetTopic // looks a topic up during setup
	reqReplay
	reqStats // reads a topic's partition stats
	reqDoom  // the doomed topic's requests (reclaim.go)
)

// request is a client request waiting for its response.
type request struct {
	client  int
	kind    reqKind
	ids     []uint64 // produce: the message ids it carries
	topic   int
	callNs  int64    // when it was sent
	part    int64    // consume or replay: the partition asked for (-1: any)
	offset  uint64   // replay: the offset
	handles []string // ack: the receipt handles
	mode    node.AckMode
}

func (u *run) submit(req request, f func(now int64, tok uint64)) {
	u.nextTok++
	req.callNs = u.s.Now()
	u.pending[u.nextTok] = req
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
	vis, ret := u.o.VisibilityMs, u.o.RetentionMs
	spec := node.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: &parts, VisibilityTimeoutMs: &vis}
	if ret > 0 {
		spec.RetentionMs = &ret
	}
	u.submit(request{client: -1, kind: reqCreate, topic: i, part: -1}, func(now int64, tok uint64) { u.n.CreateTopic(now, tok, spec) })
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
		u.m.sent[id] = sentMsg{topic: ti, pin: msgs[i].Partition, hasKey: msgs[i].HasKey, key: msgs[i].Key, callNs: u.s.Now()}
	}
	u.stats.Produced += uint64(k)
	u.record('P', uint64(c), uint64(k))
	u.submit(request{client: c, kind: reqProduce, topic: ti, ids: ids, part: -1}, func(now int64, tok uint64) { u.n.Produce(now, tok, t.name, msgs) })
}

// consume is a consumer's next request: mostly a consume with leases (of any partition
// or of one), sometimes a replay by offset or a read of the topic's stats.
func (u *run) consume(c int) {
	ti := u.r.Intn(len(u.topics))
	t := u.topics[ti]
	x := u.r.Intn(20)
	if x < 2 {
		u.submit(request{client: c, kind: reqStats, topic: ti, part: -1}, func(now int64, tok uint64) { u.n.GetTopic(now, tok, t.name) })
		return
	}
	if x < 5 && !u.healing {
		u.replay(c, ti)
		return
	}
	req := node.ConsumeRequest{Topic: t.name, Partition: -1, Max: 1 + u.r.Intn(10)}
	if x < 9 {
		req.Partition = int64(u.r.Intn(int(t.parts)))
	}
	if u.r.Chance(0.5) {
		req.WaitNs = int64(u.r.Range(1_000_000, 30_000_000))
	}
	u.record('C', uint64(c), uint64(req.Max))
	u.submit(request{client: c, kind: reqConsume, topic: ti, part: req.Partition}, func(now int64, tok uint64) { u.n.Consume(now, tok, req) })
}

// replay reads one offset of one partition without a lease: an offset seen before, or
// one near the last high watermark known (a record that may not be there yet).
func (u *run) replay(c, ti int) {
	t := u.topics[ti]
	p := uint32(u.r.Intn(int(t.parts)))
	pr := partRef{topicID: t.id, index: p}
	seen := u.m.offsets[pr]
	var off uint64
	if len(seen) > 0 && u.r.Chance(0.5) {
		off = seen[u.r.Intn(len(seen))]
	} else {
		top := uint64(0)
		for _, o := range seen[max(0, len(seen)-8):] {
			top = max(top, o+1)
		}
		off = top + uint64(u.r.Intn(4))
		off -= min(off, uint64(u.r.Intn(3)))
	}
	req := node.ConsumeRequest{Topic: t.name, Partition: int64(p), Max: 1, HasOffset: true, Offset: off}
	u.record('R', uint64(c), uint64(p), off)
	u.submit(request{client: c, kind: reqReplay, topic: ti, part: int64(p), offset: off}, func(now int64, tok uint64) { u.n.Consume(now, tok, req) })
}

// later makes client c ack, extend or nack one handle after delay ns (if the node is up
// then): a late ack may find its lease expired and its record with another consumer.
func (u *run) later(c int, handle string, mode node.AckMode, delayNs int64) {
	u.s.At(u.s.Now()+delayNs, event{kind: evLater, client: c, handle: handle, mode: mode})
}

func (u *run) onLater(e event) {
	if !u.up || u.n.IsReady() != nil {
		return
	}
	lv := u.m.handles[e.handle]
	ti := u.topicIndex(lv.key.pr.topicID)
	u.sendAcks(e.client, ti, []string{e.handle}, e.mode)
}

func (u *run) topicIndex(id uint64) int {
	for i, t := range u.topics {
		if t.id == id {
			return i
		}
	}
	panic("nodesim: a handle of an unknown topic")
}

func (u *run) sendAcks(c, ti int, handles []string, mode node.AckMode) {
	if len(handles) == 0 {
		return
	}
	u.stats.Acks += uint64(len(handles))
	name := u.topics[ti].name
	u.submit(request{client: c, kind: reqAck, topic: ti, part: -1, handles: handles, mode: mode},
		func(now int64, tok uint64) { u.n.Ack(now, tok, name, handles, mode) })
}

// onAcked checks an ack's answers; an extend answered OK is followed by a settle or a
// nack later, or by nothing (the lease expires).
func (u *run) onAcked(req request, resp node.Response) {
	u.record('K', boolBit(resp.Err != nil), uint64(req.mode))
	if err := u.checkAckResults(req, resp); err != nil {
		u.violate(err)
		return
	}
	if req.mode != node.AckExtend || resp.Err != nil || resp.Results[0] != nil {
		return
	}
	vis := u.o.VisibilityMs * 1_000_000
	switch x := u.r.Intn(4); {
	case x < 2:
		u.later(req.client, req.handles[0], node.AckSettle, sched.Between(u.r, 0, 2*vis))
	case x < 3:
		u.later(req.client, req.handles[0], node.AckRelease, sched.Between(u.r, 0, vis))
	}
}

// onResponse updates the model with an answer and schedules the client's next step.
func (u *run) onResponse(resp node.Response) {
	req, ok := u.pending[resp.Token]
	if !ok {
		u.violate(fmt.Errorf("invariant 3: a response to unknown token %d", resp.Token))
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
		if errors.Is(resp.Err, node.ErrNoSpace) || errors.Is(resp.Err, node.ErrPartitionFailed) {
			u.scheduleAfter(req, retryAfterNs) // a client honouring Retry-After
			return
		}
	case reqConsume:
		u.onConsumed(req, resp)
	case reqReplay:
		u.onReplayed(req, resp)
		return
	case reqStats:
		u.onStats(req, resp)
		return
	case reqAck:
		u.onAcked(req, resp)
		return // acks are fire-and-forget for the consumer's loop
	case reqDoom:
		u.onDoom(resp)
		return
	}
	u.scheduleNext(req)
}

// scheduleNext schedules the client's next step after an answer.
func (u *run) scheduleNext(req request) { u.scheduleAfter(req, 0) }

// scheduleAfter schedules the client's next step after an answer and a wait.
func (u *run) scheduleAfter(req request, waitNs int64) {
	if !(u.healing && req.client < u.o.Producers) {
		u.s.At(u.think()+waitNs, event{kind: evClient, client: req.client})
	}
}

// retryAfterNs is how long a producer waits after a 507 (full device) or a 503 for a
// failed partition: a client honouring Retry-After (1 s) with some impatience; one that
// asked again at once would spend the run's events on refusals (node seed 229).
const retryAfterNs = 100_000_000

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
		u.submit(request{client: -1, kind: reqGetTopic, topic: req.topic, part: -1}, func(now int64, tok uint64) { u.n.GetTopic(now, tok, name) })
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
	switch {
	case resp.Err == nil:
		for _, id := range req.ids {
			u.m.ack(id)
		}
		u.stats.Acked += uint64(len(req.ids))
	case node.Refused(resp.Err):
		for _, id := range req.ids {
			u.m.refused[id] = true
		}
		u.stats.Refused += uint64(len(req.ids))
		if errors.Is(resp.Err, node.ErrNoSpace) {
			u.stats.NoSpaceRefused++ // 507: the WAL's device is full (issue 13, point 5)
		}
	default:
		u.stats.Ambiguous += uint64(len(req.ids))
	}
}

// loseRequests: the process died with these requests unanswered.
func (u *run) loseRequests() {
	for _, tok := range sortedKeys(u.pending) {
		req := u.pending[tok]
		delete(u.pending, tok)
		if req.kind == reqProduce {
			u.stats.Ambiguous += uint64(len(req.ids))
		}
		if req.kind == reqDoom {
			u.onDoomLost()
		}
		if req.client >= 0 && req.kind != reqAck && !(u.healing && req.client < u.o.Producers) {
			u.s.At(u.think()+u.o.RestartNs, event{kind: evClient, client: req.client})
		}
	}
}
