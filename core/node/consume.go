package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
)

// consumeOp is a consume in progress: waiting for records (long poll), or waiting for
// the reads of the records it leased.
type consumeOp struct {
	token     uint64
	req       ConsumeRequest
	topic     meta.Topic
	deadline  int64 // end of the long poll
	parked    bool
	waitingOn map[uint32]bool // partitions whose waiting list holds this consume
	msgs      []Message
	receipts  []leased
	readsLeft int
}

type leased struct {
	part    *partition
	receipt lease.Receipt
}

type readRef struct {
	op   *consumeOp
	idx  int
	part partKey
}

// Consume takes up to req.Max leases on the lowest available records (or replays one
// offset without a lease) and answers with the records read back from the partition logs.
// With nothing available it waits up to req.WaitNs for a commit, a nack or an expiry.
//
// A partition another member owns is served by its owner (route.go): a pinned consume is
// routed there, and one for any partition goes to this node's partitions and to every
// other live owner at once; the first owner to answer with records answers the client.
func (n *Node) Consume(nowNs int64, token uint64, req ConsumeRequest) {
	defer n.collect(nowNs)
	t, ok := n.readyTopic(token, req.Topic)
	if !ok {
		return
	}
	if err := checkConsume(t, req); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	self := n.meta.ID()
	switch {
	case req.Partition >= 0 && n.ownerOf(t, uint32(req.Partition)) != self:
		n.consumeAt(nowNs, token, n.ownerOf(t, uint32(req.Partition)), t, req)
	case req.Partition < 0 && len(n.remoteOwners(t)) > 0:
		n.consumeSpread(nowNs, token, t, req)
	default:
		n.consumeLocal(nowNs, token, t, req)
	}
}

func checkConsume(t meta.Topic, req ConsumeRequest) error {
	switch {
	case req.Partition >= int64(t.Partitions):
		return fmt.Errorf(
			"%w: partition %d, topic has %d",
			ErrPartitionRange,
			req.Partition,
			t.Partitions,
		)
	case req.Max < 1 || req.Max > ConsumeMax:
		return fmt.Errorf("%w: max must be 1 to %d", ErrInvalid, ConsumeMax)
	case req.HasOffset && req.Partition < 0:
		return fmt.Errorf("%w: offset needs a partition", ErrInvalid)
	}
	return nil
}

// consumeLocal serves a consume from this node's partitions.
func (n *Node) consumeLocal(
	nowNs int64,
	token uint64,
	t meta.Topic,
	req ConsumeRequest,
) *consumeOp {
	op := &consumeOp{
		token:    token,
		req:      req,
		topic:    t,
		deadline: nowNs + min(req.WaitNs, ConsumeWaitMax),
	}
	n.consumes[token] = op
	n.tryConsume(nowNs, op)
	return op
}

// candidates are the partitions of this node a consume may take from, starting at a
// rotating cursor so that partitions share the consumers. A partition another member
// owns is not served here: its owner serves it (route.go).
func (n *Node) candidates(op *consumeOp) []uint32 {
	if op.req.Partition >= 0 {
		k := partKey{op.topic.ID, uint32(op.req.Partition)}
		if n.ownerOf(op.topic, k.index) != n.meta.ID() || n.frozenHere(k) || n.copyBlocks(k) {
			return nil // another's, or moving: its records wait for the move's end
		}
		return []uint32{k.index}
	}
	parts := make([]uint32, 0, op.topic.Partitions)
	start := n.cursor("consume/"+op.topic.Name) % op.topic.Partitions
	n.rr["consume/"+op.topic.Name]++
	for i := range op.topic.Partitions {
		p := (start + i) % op.topic.Partitions
		if k := (partKey{op.topic.ID, p}); n.ownerOf(op.topic, p) == n.meta.ID() && !n.frozenHere(k) &&
			!n.copyBlocks(k) {
			parts = append(parts, p)
		}
	}
	return parts
}

func (n *Node) tryConsume(nowNs int64, op *consumeOp) {
	op.parked = false
	if op.req.HasOffset {
		n.tryReplay(nowNs, op)
		return
	}
	cands := n.candidates(op)
	for _, idx := range cands {
		p := n.partitionFor(nowNs, op.topic, idx)
		if !p.ready() {
			continue
		}
		for _, r := range p.leases.Lease(nowNs, op.req.Max-len(op.receipts)) {
			op.receipts = append(op.receipts, leased{part: p, receipt: r})
		}
		if len(op.receipts) == op.req.Max {
			break
		}
	}
	if len(op.receipts) > 0 {
		n.readLeased(nowNs, op)
		return
	}
	n.parkOrAnswerEmpty(nowNs, op, cands)
}

func (n *Node) parkOrAnswerEmpty(nowNs int64, op *consumeOp, cands []uint32) {
	if nowNs >= op.deadline {
		delete(n.consumes, op.token)
		n.respond(Response{Token: op.token})
		return
	}
	op.parked = true
	for _, idx := range cands {
		n.park(op, n.parts[partKey{topicID: op.topic.ID, index: idx}])
	}
}

// park puts op on p's list of consumes waiting for records, once: a consume parked on
// several partitions and woken by one of them must not be listed again on the others
// (each wake would then retry it once per copy, and the lists would grow without bound).
func (n *Node) park(op *consumeOp, p *partition) {
	if op.waitingOn == nil {
		op.waitingOn = map[uint32]bool{}
	}
	if !op.waitingOn[p.key.index] {
		op.waitingOn[p.key.index] = true
		p.consumers = append(p.consumers, op.token)
	}
}

func (n *Node) tryReplay(nowNs int64, op *consumeOp) {
	if k := (partKey{op.topic.ID, uint32(op.req.Partition)}); n.copyBlocks(k) || n.frozenHere(k) {
		delete(n.consumes, op.token)
		n.respond(Response{Token: op.token, Err: errMoving})
		return
	}
	p := n.partitionFor(nowNs, op.topic, uint32(op.req.Partition))
	if !p.ready() {
		op.parked = true
		n.park(op, p)
		return
	}
	op.msgs = make([]Message, 1)
	op.readsLeft = 1
	n.read(nowNs, p, op, 0, op.req.Offset)
}

func (n *Node) readLeased(nowNs int64, op *consumeOp) {
	op.msgs = make([]Message, len(op.receipts))
	op.readsLeft = len(op.receipts)
	for i, l := range op.receipts {
		n.read(nowNs, l.part, op, i, l.receipt.Offset)
	}
}

func (n *Node) read(nowNs int64, p *partition, op *consumeOp, idx int, offset uint64) {
	id := n.inflight.add(entry{purpose: forRead, read: readRef{op: op, idx: idx, part: p.key}})
	p.log.Read(nowNs, id, offset, 1)
}

// onReadDone fills one message; the consume is answered when its last read is back. A
// leased record that cannot be read is released (it stays deliverable) and left out.
func (n *Node) onReadDone(nowNs int64, p *partition, r plog.ReadDone) {
	e, ok := n.inflight.take(r.Token, forRead)
	if !ok {
		return
	}
	ref := e.read
	op := ref.op
	assert.That(op.readsLeft > 0 && ref.idx < len(op.msgs),
		"node: a read answer for a consume not reading")
	op.readsLeft--
	m := &op.msgs[ref.idx]
	switch {
	case r.Err == nil && len(r.Records) > 0:
		s := r.Records[0]
		*m = Message{
			Topic:       op.topic.Name,
			TopicID:     p.key.topicID,
			Partition:   p.key.index,
			Offset:      s.Offset,
			Key:         s.Key,
			HasKey:      s.HasKey,
			Payload:     s.Payload,
			TimestampMs: s.CommitTimeMs,
		}
		if !op.req.HasOffset {
			m.ReceiptHandle = encodeHandle(p.key, s.Offset, op.receipts[ref.idx].receipt.Nonce)
		}
	case op.req.HasOffset && r.Err != nil:
		// A replay that could not read answers why: an empty answer says the offset is
		// at or past the high watermark, and must mean only that.
		op.receipts, op.msgs = nil, nil
		delete(n.consumes, op.token)
		n.respond(Response{Token: op.token, Err: replayError(r.Err)})
		return
	default:
		m.Offset = ^uint64(0) // marks a hole
		if !op.req.HasOffset {
			rc := op.receipts[ref.idx].receipt
			_ = p.leases.Nack(nowNs, rc.Offset, rc.Nonce)
		}
	}
	if op.readsLeft == 0 {
		n.finishConsume(op)
	}
}

func (n *Node) finishConsume(op *consumeOp) {
	delete(n.consumes, op.token)
	msgs := slices.DeleteFunc(
		op.msgs,
		func(m Message) bool { return m.Offset == ^uint64(0) || m.Payload == nil },
	)
	n.respond(Response{Token: op.token, Messages: msgs})
}

// wakeConsumers retries the consumes parked on p: records may be available now.
func (n *Node) wakeConsumers(nowNs int64, p *partition) {
	waiting := p.consumers
	p.consumers = nil
	for _, tok := range waiting {
		op := n.consumes[tok]
		if op == nil {
			continue
		}
		delete(op.waitingOn, p.key.index)
		if op.parked {
			n.tryConsume(nowNs, op)
		}
	}
}

// expireConsumes answers the long polls whose wait is over, in token order.
func (n *Node) expireConsumes(nowNs int64) {
	var due []uint64
	for tok, op := range n.consumes { //narad:sorted
		if op.parked && nowNs >= op.deadline {
			due = append(due, tok)
		}
	}
	slices.Sort(due)
	for _, tok := range due {
		resp := Response{Token: tok}
		if n.consumes[tok].req.HasOffset {
			// A replay waits only for its partition's recovery: nothing says the offset is
			// past the end (204), so it is not ready (503).
			resp.Err = fmt.Errorf("%w: the partition is recovering", ErrNotReady)
		}
		delete(n.consumes, tok)
		n.respond(resp)
	}
	// Leases may have expired or been released: parked consumes try again.
	for _, pk := range n.partKeys {
		if p := n.parts[pk]; len(p.consumers) > 0 && p.ready() && p.leases.Available(nowNs) {
			n.wakeConsumers(nowNs, p)
		}
	}
}

func (n *Node) consumeDeadline() (int64, bool) {
	var at int64
	for _, op := range n.consumes { //narad:unordered (a minimum)
		if op.parked && (at == 0 || op.deadline < at) {
			at = op.deadline
		}
	}
	return at, at != 0
}

// CancelConsume drops a consume whose client went away. Records it leased stay leased
// until their visibility timeout (the client may have received nothing).
func (n *Node) CancelConsume(nowNs int64, token uint64) {
	if op := n.consumes[token]; op != nil && op.parked {
		delete(n.consumes, token)
	}
}

// replayError is the answer to a replay whose read failed: retention removed the offset
// (410), the record fails its checksum (500), else not ready (503: the log is recovering
// or its reads are at their bound).
func replayError(err error) error {
	switch {
	case errors.Is(err, plog.ErrRemoved):
		return ErrOffsetRemoved
	case errors.Is(err, plog.ErrCorrupt):
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return fmt.Errorf("%w: the read failed: %v", ErrNotReady, err)
}
