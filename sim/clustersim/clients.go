package clustersim

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
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
	reqStats
	reqUser               // the admin's change of a user (topic: its name; mode: which change)
	reqForget             // a forget seed's forget of the outage's node (forget.go)
	reqDecommission       // a decommission seed's decommission of its spare (decommission.go)
	reqCancelDecommission // and its one cancel
	reqMove               // a move seed's move or abort (moves.go)
)

// request is a client request waiting for its answer.
type request struct {
	client  int
	kind    reqKind
	topic   string
	ids     []uint64
	callNs  int64
	mode    node.AckMode
	acked   []recKey      // the records of an ack's handles, in order
	handles []string      // and the handles
	leases  []*leaseState // and the leases they named
	marks   []ackMark     // and their owners' ack-file damage when the ack was sent
	replay  bool
	partIdx int64
	offset  uint64
	change  userChange // a reqUser's
}

// model is what the clients were told and saw.
type model struct {
	nextID        uint64
	sent          map[uint64]*sent
	acked         map[uint64]bool // main topic messages answered 202
	refused       map[uint64]bool
	delivered     map[uint64]int
	firstDelivery map[uint64]int64
	places        map[uint64][]recKey    // the records a message was delivered at
	seen          map[recKey]uint64      // record -> the message delivered there
	leases        map[recKey]*leaseState // record -> its latest lease
	handles       map[string]recKey      // receipt handle -> its record
	missing       int                    // acked and never delivered (nor given up)
	givenUp       map[uint64]bool        // acked, held only by a forgotten node (forget.go)
}

func newModel() model {
	return model{sent: map[uint64]*sent{}, acked: map[uint64]bool{}, refused: map[uint64]bool{},
		delivered: map[uint64]int{}, firstDelivery: map[uint64]int64{}, places: map[uint64][]recKey{},
		seen: map[recKey]uint64{}, leases: map[recKey]*leaseState{}, handles: map[string]recKey{},
		givenUp: map[uint64]bool{}}
}

func (u *run) isProducer(c int) bool { return c < u.o.Producers }

// statsClient is the client that reads partition statistics (high watermarks).
func (u *run) statsClient() int { return u.o.Producers + u.o.Consumers }

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
	u.submitReq(i, request{client: client, kind: kind, topic: topic, ids: ids}, f)
}

// submitTo is submit for a request about topic name.
func (u *run) submitTo(i, client int, kind reqKind, name string, ids []uint64, f func(n *node.Node, now int64, tok uint64)) {
	u.submitReq(i, request{client: client, kind: kind, topic: name, ids: ids}, f)
}

func (u *run) submitReq(i int, req request, f func(n *node.Node, now int64, tok uint64)) {
	mb := u.members[i]
	u.tokens++
	req.callNs = u.s.Now()
	mb.pending[u.tokens] = req
	f(mb.n, u.nowOf(mb), u.tokens)
	u.drain(i)
}

// clientStep: before the topic exists, any client sets it up (once every node is a
// member, so that its partitions spread over all); then producers produce, consumers
// consume (any partition, a pinned one, or a replay by offset) and the stats client reads
// the partitions' high watermarks, each on a node drawn at random.
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
	case c == u.statsClient():
		name := u.pickTopic()
		u.submitTo(i, c, reqStats, name, nil, func(n *node.Node, now int64, tok uint64) { n.GetTopic(now, tok, name) })
	default:
		u.consume(i, c)
	}
}

// Shares of the clients' choices, in percent.
const (
	keyedPercent    = 30 // of messages: keyed
	pinnedPercent   = 15 // of messages: pinned
	pinConsPercent  = 15 // of consumes: of one partition
	replayPercent   = 15 // of consumes: a replay by offset
	keySpace        = 16 // distinct keys
	replayBeyondMax = 4  // a replay past the highest offset seen, by up to this much
)

func (u *run) consume(i, c int) {
	name := u.pickTopic()
	req := request{client: c, kind: reqConsume, topic: name, partIdx: -1}
	cr := node.ConsumeRequest{Topic: name, Partition: -1, Max: 1 + u.r.Intn(10), WaitNs: int64(u.r.Intn(20_000_000))}
	switch roll := u.r.Intn(100); {
	case roll < replayPercent && name == topic && u.topicID != 0:
		p := u.r.Intn(int(u.o.Partitions))
		req.replay, req.partIdx, req.offset = true, int64(p), u.replayOffset(uint32(p))
		cr = node.ConsumeRequest{Topic: name, Partition: int64(p), Max: 1, HasOffset: true, Offset: req.offset}
		u.stats.Replays++
	case roll < replayPercent+pinConsPercent:
		req.partIdx = int64(u.r.Intn(int(u.o.Partitions)))
		cr.Partition = req.partIdx
		u.stats.PinnedConsumes++
	}
	actor, ok := u.gate(i, c, access.Consume, name)
	if !ok {
		u.s.At(u.think()+errorBackoffNs, event{kind: evClient, client: c})
		return
	}
	cr.Actor = actor
	u.record('C', uint64(c))
	u.submitReq(i, req, func(n *node.Node, now int64, tok uint64) { n.Consume(now, tok, cr) })
}

// replayOffset draws an offset of partition p to replay: one delivered there before, or
// one a little past the highest seen (nothing may be there yet).
func (u *run) replayOffset(p uint32) uint64 {
	hi := uint64(0)
	for k := range u.m.seen { //narad:unordered (a maximum)
		if k.topicID == u.topicID && k.part == p && k.offset+1 > hi {
			hi = k.offset + 1
		}
	}
	return uint64(u.r.Intn(int(hi) + replayBeyondMax))
}

func (u *run) produce(i, c int) {
	k, name := 1+u.r.Intn(4), u.pickTopic()
	msgs := make([]node.ProduceMessage, k)
	ids := make([]uint64, k)
	for j := range msgs {
		u.m.nextID++
		ids[j] = u.m.nextID
		rest := make([]byte, u.r.Intn(u.o.PayloadMax+1))
		_, _ = u.r.Read(rest) // a seeded generator never fails
		p := invariants.MessagePayload(ids[j], rest)
		s := &sent{topic: name, pin: -1, payload: p, node: i, callNs: u.s.Now()}
		switch roll := u.r.Intn(100); {
		case roll < keyedPercent:
			s.hasKey, s.key = true, fmt.Appendf(nil, "k%d", u.r.Intn(keySpace))
		case roll < keyedPercent+pinnedPercent:
			s.pin = int64(u.r.Intn(int(u.o.Partitions)))
		}
		u.m.sent[ids[j]] = s
		msgs[j] = node.ProduceMessage{Partition: s.pin, Key: s.key, HasKey: s.hasKey, Payload: p}
	}
	u.stats.Produced += uint64(k)
	if _, ok := u.gate(i, c, access.Produce, name); !ok {
		u.refuseProduce(c, ids)
		return
	}
	if u.o.SyncPercent > 0 && u.r.Intn(100) < u.o.SyncPercent {
		u.stats.Synchronous += uint64(k)
		for _, id := range ids {
			u.m.sent[id].sync = true
		}
		u.record('S', uint64(c), uint64(k))
		u.submitProduce(i, c, name, ids, func(n *node.Node, now int64, tok uint64) { n.ProduceSync(now, tok, name, msgs) })
		return
	}
	u.record('P', uint64(c), uint64(k))
	u.submitProduce(i, c, name, ids, func(n *node.Node, now int64, tok uint64) { n.Produce(now, tok, name, msgs) })
}

// produceWaitNs is how long a producer waits for an answer (an HTTP client's timeout):
// a synchronous produce may wait for its owner's commit for CommitTimeoutNs (30 s in
// some seeds), and a producer stuck that long makes a seed that exercises nothing (seed
// 863617: both producers waited 20 s behind network cuts). Its answer, when it comes,
// still counts; the producer has moved on.
const produceWaitNs = 5_000_000_000

// submitProduce submits producer c's produce and gives up waiting after produceWaitNs.
func (u *run) submitProduce(i, c int, name string, ids []uint64, f func(n *node.Node, now int64, tok uint64)) {
	tok := u.tokens + 1 // set before: the answer may come from inside the submit
	u.waiting[c] = tok
	u.submitTo(i, c, reqProduce, name, ids, f)
	if u.waiting[c] == tok {
		u.s.At(u.s.Now()+produceWaitNs, event{kind: evGiveUp, client: c, epoch: tok})
	}
}

// giveUp: producer c stops waiting for the produce of token tok, if still unanswered,
// and sends its next one.
func (u *run) giveUp(c int, tok uint64) {
	if u.waiting[c] != tok || u.healing {
		return
	}
	delete(u.waiting, c)
	u.stats.GaveUp++
	u.s.At(u.think()+errorBackoffNs, event{kind: evClient, client: c})
}

// answered reports whether the client still waits for the answer of tok (and stops
// waiting): a producer that gave up waiting is not woken by the late answer.
func (u *run) answered(req request, tok uint64) bool {
	if req.kind != reqProduce {
		return true
	}
	if u.waiting[req.client] != tok {
		return false
	}
	delete(u.waiting, req.client)
	return true
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
		} else { // not from inside this answer: a synchronous refusal would recurse
			u.s.At(u.s.Now()+errorBackoffNs, event{kind: evLearnTopic})
		}
		return
	case reqStats:
		u.onStats(req, resp)
	case reqProduce:
		u.onProduced(req, resp)
		if !u.answered(req, resp.Token) {
			return
		}
	case reqConsume:
		u.onConsumed(mb, req, resp)
	case reqAck:
		u.onAcked(req, resp)
		return
	case reqUser:
		u.onUserChanged(req, resp)
		return
	case reqForget:
		u.onForgetAnswer(resp)
		return
	case reqDecommission:
		u.onDecommissionAnswer(resp)
		return
	case reqCancelDecommission:
		u.onCancelAnswer(resp)
		return
	case reqMove:
		u.onMoveAnswer(resp)
		return
	}
	next := u.think()
	if resp.Err != nil {
		next += errorBackoffNs // a client backs off on errors (think time may be 0)
	}
	if next == req.callNs {
		// Answered at the instant it was sent (a stats gather whose sends all failed at
		// the sender): with no think time the client would ask again at that instant
		// for ever (seeds 285, 293: a livelock of the model, not of the node).
		next += instantAnswerGapNs
	}
	u.s.At(next, event{kind: evClient, client: req.client})
}

// instantAnswerGapNs is the least a client waits after an answer that came at the
// instant it asked: its round trip, which the simulation otherwise takes as zero.
const instantAnswerGapNs = 100_000

// errorBackoffNs is how long a client waits before retrying after an error answer.
const errorBackoffNs = 10_000_000

// onCreated: the main topic exists; the faults that need it start.
func (u *run) onCreated(mb *member, req request, resp node.Response) {
	if u.ready || (resp.Err != nil && !errors.Is(resp.Err, node.ErrTopicExists)) {
		return
	}
	u.ready = true
	u.readyAtNs = u.s.Now()
	if resp.Err == nil {
		u.topicID = resp.Topic.ID
	} else { // created by an earlier attempt: learn its id
		u.learnTopicID(mb)
	}
	u.startFaults()
}

// learnTopicID asks a node that is up for the main topic's id.
func (u *run) learnTopicID(*member) {
	if i, ok := u.upNode(); ok {
		u.submit(i, adminClient, reqGetTopic, nil, func(n *node.Node, now int64, tok uint64) { n.GetTopic(now, tok, topic) })
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
	if resp.Err != nil || alive < len(u.members)-max(0, min(1, u.spare()+1)) || u.ready {
		u.s.At(u.think()+10_000_000, event{kind: evClient, client: req.client})
		return
	}
	u.submit(int(mb.id-1), req.client, reqCreate, nil, func(n *node.Node, now int64, tok uint64) {
		n.CreateTopic(now, tok, u.topicSpec(topic))
	})
}

// topicSpec is how the simulator creates a topic: its partitions and a visibility
// timeout short enough that leases expire within the run.
func (u *run) topicSpec(name string) node.TopicSpec {
	parts, vis := u.o.Partitions, u.visibilityNs/1_000_000
	return node.TopicSpec{Name: name, Partitions: &parts, VisibilityTimeoutMs: &vis}
}

func (u *run) onProduced(req request, resp node.Response) {
	for _, id := range req.ids {
		u.m.sent[id].endNs = u.s.Now()
	}
	switch {
	case resp.Err == nil && req.topic == churnTopic: // may be discarded: see churn.go
		u.stats.Acked += uint64(len(req.ids))
	case resp.Err == nil:
		for _, id := range req.ids {
			if !u.m.acked[id] && u.m.delivered[id] == 0 {
				u.m.missing++
			}
			u.m.acked[id] = true
		}
		u.stats.Acked += uint64(len(req.ids))
		u.stats.AckedMain += uint64(len(req.ids))
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

// onConsumed checks every delivered message (invariants 3, 4, 8, 9, 10) and acks, nacks,
// extends or leaves most of them (acks all while healing).
func (u *run) onConsumed(mb *member, req request, resp node.Response) {
	if req.replay {
		u.onReplayed(mb, req, resp)
		return
	}
	var settle, nack, extend []string
	actor, acks := meta.SystemActor, true
	if len(resp.Messages) > 0 {
		actor, acks = u.gate(int(mb.id-1), req.client, access.Consume, req.topic) // refused: the client acks nothing
	}
	top := map[string]recKey{} // partition -> the highest record this answer read there
	defer u.readTops(top, req.callNs)
	for _, msg := range resp.Messages {
		id, ok := u.checkDelivery(mb.id, msg)
		if !ok {
			return
		}
		k := recKey{topicID: msg.TopicID, part: msg.Partition, offset: msg.Offset}
		if !u.deliveredAt(mb.id, k, id) || !u.noteDelivery(k, id, req.client, req.callNs) {
			return
		}
		if t, ok := top[partName(k)]; !ok || k.offset > t.offset {
			top[partName(k)] = k
		}
		if u.m.delivered[id] == 0 && u.m.acked[id] && !u.m.givenUp[id] {
			u.m.missing--
		}
		u.m.delivered[id]++
		u.stats.Delivered++
		u.m.handles[msg.ReceiptHandle] = k
		if !acks {
			continue
		}
		switch roll := u.r.Intn(100); {
		case u.healing || roll < 70:
			settle = append(settle, msg.ReceiptHandle)
		case roll < 80:
			nack = append(nack, msg.ReceiptHandle)
			u.m.leases[k].nacked = true
		case roll < 90:
			extend = append(extend, msg.ReceiptHandle)
		}
	}
	u.ack(mb, req, actor, settle, node.AckSettle)
	u.ack(mb, req, actor, nack, node.AckRelease)
	u.ack(mb, req, actor, extend, node.AckExtend)
}

// ack sends handles' ack of one mode to the node that delivered them.
func (u *run) ack(mb *member, req request, actor string, handles []string, mode node.AckMode) {
	if len(handles) == 0 || !mb.up {
		return
	}
	recs := make([]recKey, len(handles))
	leases := make([]*leaseState, len(handles))
	marks := make([]ackMark, len(handles))
	for j, h := range handles {
		recs[j] = u.m.handles[h]
		leases[j] = u.m.leases[recs[j]]
		marks[j] = u.markAck(recs[j])
	}
	a := request{client: req.client, kind: reqAck, topic: req.topic, mode: mode, acked: recs, handles: handles, leases: leases, marks: marks}
	u.submitReq(int(mb.id-1), a, func(n *node.Node, now int64, tok uint64) { n.AckAs(now, tok, actor, req.topic, handles, mode) })
}

// onAcked checks an ack's answers: a settle or extend of a lease that is surely live
// must be answered OK (invariant 9), and an OK answer is noted on the lease.
func (u *run) onAcked(req request, resp node.Response) {
	for j, k := range req.acked {
		l := req.leases[j]
		if l == nil || (resp.Err == nil && j >= len(resp.Results)) {
			continue
		}
		if ok := resp.Err == nil && resp.Results[j] == nil; !ok {
			if err := u.checkAckGone(k, l, req, resp); err != nil {
				u.violate(err)
				return
			}
			continue
		}
		u.stats.AckChecks++
		switch req.mode {
		case node.AckSettle:
			l.ackCallNs, l.ackDoneNs, l.ackMark = req.callNs, u.s.Now(), req.marks[j]
		case node.AckExtend:
			l.renewedNs = req.callNs
		}
	}
}

// checkAckGone: an ack answered "lease gone" (410) for a lease that was surely live when
// the ack was sent (not expired, not nacked, its owner not crashed since) is wrong.
func (u *run) checkAckGone(k recKey, l *leaseState, req request, resp node.Response) error {
	if resp.Err != nil || req.mode == node.AckRelease || l.nacked {
		return nil // not answered (routed, owner down): says nothing
	}
	if j := slices.Index(req.acked, k); j < 0 || j >= len(resp.Results) || !errors.Is(resp.Results[j], node.ErrLeaseGone) {
		return nil // not "lease gone" (a replica that lags answers not ready): says nothing
	}
	if k.topicID != u.topicID && u.churnDeleteSent(u.churn.createdAt[k.topicID], u.s.Now()) {
		return nil // the churn topic's incarnation may be gone, and its leases with it
	}
	start := max(l.callNs, l.renewedNs)
	if u.ackReachedNs(req.handles[slices.Index(req.acked, k)], req) >= start+u.visibilityNs-u.clockSlackNs(start, u.s.Now())-u.netSlackNs() || u.ownerCrashed(k, l.callNs, u.s.Now()) ||
		u.ownerReopened(k, l.callNs, u.s.Now()) || u.anyOwner(k, (*invariants.Poison).Failing) ||
		u.movedBetween(k, l.callNs, u.s.Now()) {
		return nil // a reopen lost the lease, or the partition failed and drains for one
	}
	u.stats.AckChecks++
	return fmt.Errorf("invariant 9: an ack (mode %d) of record %d/%d@%d sent at %d ns, %d ms into its lease of %d ms, was answered %v", req.mode, k.topicID, k.part, k.offset, req.callNs, (req.callNs-start)/1_000_000, u.visibilityNs/1_000_000, resp.Results)
}

// netSlackNs: a routed ack reaches the owner at most this long after it was sent.
func (u *run) netSlackNs() int64 { return 2 * u.o.Net.DelayMaxNs }

// onReplayed checks a replay by offset: a record it returns is held to its produce and
// to what that offset held before; an empty answer says the offset is not yet there.
func (u *run) onReplayed(mb *member, req request, resp node.Response) {
	switch {
	case resp.Err != nil:
		return
	case len(resp.Messages) == 0:
		if u.topicID != 0 {
			u.parts.ReadAbsent(partName(recKey{topicID: u.topicID, part: uint32(req.partIdx)}), req.offset, req.callNs, u.s.Now())
		}
		return
	}
	msg := resp.Messages[0]
	id, ok := u.checkDelivery(mb.id, msg)
	if !ok {
		return
	}
	k := recKey{topicID: msg.TopicID, part: msg.Partition, offset: msg.Offset}
	if msg.Partition != uint32(req.partIdx) || msg.Offset != req.offset || msg.ReceiptHandle != "" {
		u.violate(fmt.Errorf("invariant 8: a replay of offset %d of partition %d answered offset %d of partition %d (handle %q)", req.offset, req.partIdx, msg.Offset, msg.Partition, msg.ReceiptHandle))
		return
	}
	if u.deliveredAt(mb.id, k, id) {
		u.stats.ReplayChecks++
		u.parts.Read(partName(k), k.offset, id, req.callNs, u.s.Now())
	}
}

// loseRequests: the node died with these requests unanswered; produces are ambiguous.
func (u *run) loseRequests(mb *member) {
	for _, tok := range slices.Sorted(maps.Keys(mb.pending)) {
		req := mb.pending[tok]
		switch req.kind {
		case reqProduce:
			u.stats.Ambiguous += uint64(len(req.ids))
			for _, id := range req.ids {
				u.m.sent[id].endNs = u.s.Now()
			}
		case reqAck:
			continue
		case reqChurn:
			u.s.At(u.after(u.o.ChurnGapNs), event{kind: evChurn})
			continue
		case reqUser:
			u.scheduleUserStep(true)
			continue
		case reqForget:
			u.forgetPending = false // ambiguous: forgetStep asks a replica
			continue
		case reqDecommission, reqCancelDecommission:
			u.decom.pending = false // ambiguous: the next poll asks a replica
			continue
		case reqMove:
			continue // the next move step goes on
		case reqGetTopic:
			u.s.At(u.s.Now()+errorBackoffNs, event{kind: evLearnTopic})
			continue
		}
		if !u.answered(req, tok) {
			continue
		}
		u.s.At(u.think()+u.o.RestartNs[0], event{kind: evClient, client: req.client})
	}
	mb.pending = map[uint64]request{}
}

// deliveredAt notes that record k held message id (invariant 4: an offset never
// delivers another message); false after a violation.
func (u *run) deliveredAt(from uint64, k recKey, id uint64) bool {
	if prev, ok := u.m.seen[k]; ok && prev != id {
		u.violate(fmt.Errorf("invariant 4: node %d delivered message %d at offset %d of partition %d of incarnation %d, which delivered message %d before", from, id, k.offset, k.part, k.topicID, prev))
		return false
	}
	u.m.seen[k] = id
	return true
}

// partName names a partition in the linearizability history: incarnation and index.
func partName(k recKey) string { return fmt.Sprintf("%d/%d", k.topicID, k.part) }

// onStats records the high watermarks a GetTopic read (zeros, from owners that did not
// answer, are ignored by the history).
func (u *run) onStats(req request, resp node.Response) {
	if resp.Err != nil || resp.Topic.ID == 0 {
		return
	}
	if req.topic == churnTopic {
		u.churn.observed(resp.Topic.ID, u.s.Now())
	}
	for _, ps := range resp.Stats {
		if ps.HighWatermark > 0 {
			u.stats.WatermarkReads++
		}
		u.parts.HighWatermark(partName(recKey{topicID: resp.Topic.ID, part: ps.Index}), ps.HighWatermark, req.callNs, u.s.Now())
	}
}

// readTops records one read per partition of a consume's answer, of the highest offset
// it read there: the lower ones, read at the same moment, tell the linearizability model
// nothing more (a value read twice is held by invariant 4), and each would multiply the
// orders porcupine tries.
func (u *run) readTops(top map[string]recKey, callNs int64) {
	for _, name := range slices.Sorted(maps.Keys(top)) {
		k := top[name]
		u.parts.Read(name, k.offset, u.m.seen[k], callNs, u.s.Now())
	}
}
