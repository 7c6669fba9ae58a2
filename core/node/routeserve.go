package node

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/wire"
)

// The owner's side of routed consumes and acks, and the status codes between the two.

// onConsumeRequest serves a peer's routed consume from this node's partitions.
func (n *Node) onConsumeRequest(nowNs int64, from uint64, m wire.ConsumeRequest) {
	if n.seenRequest(nowNs, from, wire.KindConsumeRequest, m.ID) {
		return // a copy: serving it would lease records nobody receives
	}
	req := ConsumeRequest{
		Actor:     m.Actor,
		Topic:     m.Topic,
		Partition: m.Partition,
		Max:       int(m.Max),
		WaitNs:    m.WaitNs,
		HasOffset: m.HasOffset,
		Offset:    m.Offset,
	}
	refuse := func(err error) {
		st, reason := errorStatus(err)
		n.send(from, wire.ConsumeResponse{ID: m.ID, Status: st, Reason: reason})
	}
	if err := n.IsReady(); err != nil {
		refuse(err)
		return
	}
	t, ok := n.meta.Topic(m.Topic)
	if !ok {
		refuse(ErrTopicNotFound)
		return
	}
	if err := checkConsume(t, req); err != nil {
		refuse(err)
		return
	}
	if err := n.checkActor(m.Actor, t); err != nil {
		refuse(err)
		return
	}
	if req.Partition >= 0 && n.ownerOf(t, uint32(req.Partition)) != n.meta.ID() {
		n.send(from, wire.ConsumeResponse{ID: m.ID, Status: wire.StatusNotOwner})
		return
	}
	key := routedConsume{from: from, id: m.ID}
	tok := n.internal(func(now int64, r Response) {
		delete(n.routed, key)
		if r.Err != nil {
			refuse(r.Err)
			return
		}
		n.send(
			from,
			wire.ConsumeResponse{
				ID:       m.ID,
				Status:   wire.StatusOK,
				TopicID:  t.ID,
				Messages: n.fitMessages(now, t.ID, r.Messages),
			},
		)
	})
	n.routed[key] = tok
	n.consumeLocal(nowNs, tok, t, req)
}

// routedConsume names a peer's routed consume: the peer and its request id.
type routedConsume struct{ from, id uint64 }

// onConsumeCancel ends a routed consume whose asker answered its client from another
// owner: one still waiting for records answers empty now (a consume reading records it
// leased answers them, and the asker releases them).
func (n *Node) onConsumeCancel(from uint64, m wire.ConsumeCancel) {
	tok, ok := n.routed[routedConsume{from: from, id: m.ID}]
	if op := n.consumes[tok]; ok && op != nil && op.parked {
		delete(n.consumes, tok)
		n.respond(Response{Token: tok})
	}
}

// fitMessages keeps the messages that fit one ConsumeResponse (always the first) and
// releases the leases of the rest.
func (n *Node) fitMessages(nowNs int64, topicID uint64, msgs []Message) []wire.Delivered {
	out := make([]wire.Delivered, 0, len(msgs))
	size := 0
	for _, m := range msgs {
		size += len(m.Key) + len(m.Payload)
		if len(out) > 0 && size > wire.ConsumeBytesMax {
			if m.ReceiptHandle != "" {
				_ = n.ackOne(nowNs, topicID, m.ReceiptHandle, AckRelease)
			}
			continue
		}
		out = append(
			out,
			wire.Delivered{Partition: m.Partition, Offset: m.Offset, TimestampMs: m.TimestampMs,
				HasKey: m.HasKey, Key: m.Key, Payload: m.Payload, Handle: m.ReceiptHandle},
		)
	}
	return out
}

// onAckRequest settles, extends or releases leases of this node's partitions for a peer.
func (n *Node) onAckRequest(nowNs int64, from uint64, m wire.AckRequest) {
	if n.seenRequest(nowNs, from, wire.KindAckRequest, m.ID) {
		return // a copy: its "gone" answer could overtake the first copy's
	}
	resp := wire.AckResponse{ID: m.ID, Status: wire.StatusOK}
	t, ok := n.meta.Topic(m.Topic)
	switch err := n.IsReady(); {
	case err != nil:
		resp.Status, resp.Reason = errorStatus(err)
	case !ok:
		resp.Status = wire.StatusNotFound
	case n.checkActor(m.Actor, t) != nil:
		resp.Status = wire.StatusForbidden
	case n.refuseFrozenAcks(m.Handles) != nil:
		resp.Status, resp.Reason = errorStatus(errMoving)
	case n.refuseMovedAcks(t, m.Handles) != nil:
		resp.Status, resp.Reason = errorStatus(n.refuseMovedAcks(t, m.Handles))
	default:
		for _, h := range m.Handles {
			err := n.ackOne(nowNs, t.ID, h, AckMode(m.Mode))
			switch {
			case err == nil:
				resp.Results = append(resp.Results, wire.AckOK)
			case errors.Is(err, ErrBadHandle):
				resp.Results = append(resp.Results, wire.AckBadHandle)
			default:
				resp.Results = append(resp.Results, wire.AckGone)
			}
		}
	}
	n.send(from, resp)
}

// errorStatus is the status an owner answers for err.
func errorStatus(err error) (wire.Status, string) {
	reason := truncate(err.Error(), wire.ReasonBytesMax)
	switch {
	case errors.Is(err, ErrTopicNotFound):
		return wire.StatusNotFound, ""
	case errors.Is(err, ErrNotReady), errors.Is(err, ErrShuttingDown):
		return wire.StatusNotReady, reason
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrPartitionRange):
		return wire.StatusInvalid, reason
	case errors.Is(err, ErrOffsetRemoved):
		return wire.StatusRemoved, ""
	case errors.Is(err, ErrCorrupt):
		return wire.StatusCorrupt, ""
	case errors.Is(err, ErrForbidden):
		return wire.StatusForbidden, ""
	}
	return wire.StatusFailed, reason
}

// statusError is the error a routed request's status gives the client.
func statusError(st wire.Status, reason string) error {
	switch st {
	case wire.StatusNotFound:
		return ErrTopicNotFound
	case wire.StatusForbidden:
		return ErrForbidden
	case wire.StatusInvalid:
		return fmt.Errorf("%w: %s", ErrInvalid, reason)
	case wire.StatusRemoved:
		return ErrOffsetRemoved
	case wire.StatusCorrupt:
		return ErrCorrupt
	case wire.StatusNotOwner:
		return fmt.Errorf("%w: the partition's owner changed", ErrNotReady)
	}
	return fmt.Errorf("%w: the partition's owner: %s", ErrNotReady, reason)
}

// onStatsRequest answers the stats of this node's partitions of a topic, naming the
// incarnation they belong to: the asker's replica may hold another one of that name.
func (n *Node) onStatsRequest(nowNs int64, from uint64, m wire.StatsRequest) {
	resp := wire.StatsResponse{ID: m.ID, Status: wire.StatusOK}
	t, ok := n.meta.Topic(m.Topic)
	switch err := n.IsReady(); {
	case err != nil:
		resp.Status, _ = errorStatus(err)
	case !ok:
		resp.Status = wire.StatusNotFound
	default:
		resp.Partitions, resp.TopicID = n.localStats(nowNs, t), t.ID
	}
	n.send(from, resp)
}
