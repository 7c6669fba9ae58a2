package node

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/wire"
)

// Receipt handles are opaque to clients: base64url of topic incarnation u64, partition
// u32, offset u64 and the lease's random nonce u64. The nonce makes them unforgeable: a
// handle is honoured only while its lease holds that nonce.
const handleBytes = 28

func encodeHandle(k partKey, offset, nonce uint64) string {
	var b [handleBytes]byte
	binary.BigEndian.PutUint64(b[0:], k.topicID)
	binary.BigEndian.PutUint32(b[8:], k.index)
	binary.BigEndian.PutUint64(b[12:], offset)
	binary.BigEndian.PutUint64(b[20:], nonce)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func decodeHandle(h string) (k partKey, offset, nonce uint64, err error) {
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil || len(b) != handleBytes {
		return partKey{}, 0, 0, ErrBadHandle
	}
	k = partKey{topicID: binary.BigEndian.Uint64(b[0:]), index: binary.BigEndian.Uint32(b[8:])}
	return k, binary.BigEndian.Uint64(b[12:]), binary.BigEndian.Uint64(b[20:]), nil
}

// Ack settles, extends or releases the leases named by handles, answering one error per
// handle (nil, or ErrLeaseGone / ErrBadHandle: the API's 410) in order.
func (n *Node) Ack(nowNs int64, token uint64, topic string, handles []string, mode AckMode) {
	n.AckAs(nowNs, token, meta.SystemActor, topic, handles, mode)
}

// AckAs is Ack made for actor: the owners of the handles this node does not own check
// actor's consume grant again from their replicas (ConsumeRequest.Actor).
func (n *Node) AckAs(
	nowNs int64,
	token uint64,
	actor, topic string,
	handles []string,
	mode AckMode,
) {
	defer n.collect(nowNs)
	t, ok := n.readyTopic(token, topic)
	if !ok {
		return
	}
	if len(handles) == 0 || len(handles) > AckBatchMax {
		n.respond(
			Response{Token: token, Err: fmt.Errorf("%w: 1 to %d receipt handles", ErrInvalid, AckBatchMax)},
		)
		return
	}
	if err := n.refuseFrozenAcks(handles); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	results := make([]error, len(handles))
	remote := map[uint64][]int{} // owner -> indexes of its handles
	for i, h := range handles {
		owner, err := n.handleOwner(t, h)
		switch {
		case err != nil:
			results[i] = err
		case owner == n.meta.ID():
			results[i] = n.ackOne(nowNs, t.ID, h, mode)
		default:
			remote[owner] = append(remote[owner], i)
		}
	}
	if len(remote) == 0 {
		n.respond(Response{Token: token, Results: results})
		return
	}
	n.routeAcks(nowNs, token, actor, t.Name, handles, mode, results, remote)
}

// handleOwner is the member owning the partition a handle names.
func (n *Node) handleOwner(t meta.Topic, h string) (uint64, error) {
	k, _, _, err := decodeHandle(h)
	if err != nil {
		return 0, err
	}
	if k.topicID != t.ID || k.index >= t.Partitions {
		return 0, ErrLeaseGone // another topic's handle
	}
	return n.ownerOf(t, k.index), nil
}

// routeAcks sends each owner its handles and answers once all answered: results in
// order, or ErrNotReady when an owner did not (those acks may or may not be done).
func (n *Node) routeAcks(
	nowNs int64,
	token uint64,
	actor, topic string,
	handles []string,
	mode AckMode,
	results []error,
	remote map[uint64][]int,
) {
	pending := len(remote)
	var failed error
	for _, owner := range slices.Sorted(maps.Keys(remote)) {
		idx := remote[owner]
		hs := make([]string, len(idx))
		for j, i := range idx {
			hs[j] = handles[i]
		}
		n.call(nowNs, owner, RouteTimeoutNs,
			func(id uint64) wire.Message {
				return wire.AckRequest{Actor: actor, ID: id, Topic: topic, Mode: uint8(mode), Handles: hs}
			},
			func(_ int64, m wire.Message) {
				if err := fillAckResults(m, idx, results); err != nil {
					failed = err
				}
				if pending--; pending > 0 {
					return
				}
				if failed != nil {
					n.respond(Response{Token: token, Err: failed})
					return
				}
				n.respond(Response{Token: token, Results: results})
			})
	}
}

func fillAckResults(m wire.Message, idx []int, results []error) error {
	r, ok := m.(wire.AckResponse)
	if !ok && mutAckUnanswered {
		return nil
	}
	if !ok {
		return fmt.Errorf("%w: the partition's owner did not answer the ack", ErrNotReady)
	}
	if r.Status != wire.StatusOK {
		return statusError(r.Status, r.Reason)
	}
	if len(r.Results) != len(idx) {
		return fmt.Errorf(
			"%w: the partition's owner answered %d results for %d handles",
			ErrNotReady,
			len(r.Results),
			len(idx),
		)
	}
	for j, i := range idx {
		switch r.Results[j] {
		case wire.AckOK:
			results[i] = nil
		case wire.AckBadHandle:
			results[i] = ErrBadHandle
		default:
			results[i] = ErrLeaseGone
		}
	}
	return nil
}

func (n *Node) ackOne(nowNs int64, topicID uint64, h string, mode AckMode) error {
	k, offset, nonce, err := decodeHandle(h)
	if err != nil {
		return err
	}
	p := n.parts[k]
	if k.topicID != topicID || p == nil || !p.ready() {
		return ErrLeaseGone // another topic's handle, or a lease lost with a restart
	}
	if t, ok := n.meta.TopicByID(topicID); !ok || n.ownerOf(t, k.index) != n.meta.ID() {
		return ErrLeaseGone // moved away (its leases ended with the move: move.go)
	}
	switch mode {
	case AckExtend:
		_, err = p.leases.Extend(nowNs, offset, nonce)
	case AckRelease:
		err = p.leases.Nack(nowNs, offset, nonce)
		if err == nil {
			n.wakeConsumers(nowNs, p)
		}
	default:
		err = p.leases.Ack(nowNs, offset, nonce)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLeaseGone, err)
	}
	return nil
}
