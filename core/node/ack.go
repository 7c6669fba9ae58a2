package node

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
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
	defer n.collect(nowNs)
	t, ok := n.readyTopic(token, topic)
	if !ok {
		return
	}
	if len(handles) == 0 || len(handles) > AckBatchMax {
		n.respond(Response{Token: token, Err: fmt.Errorf("%w: 1 to %d receipt handles", ErrInvalid, AckBatchMax)})
		return
	}
	results := make([]error, len(handles))
	for i, h := range handles {
		results[i] = n.ackOne(nowNs, t.ID, h, mode)
	}
	n.respond(Response{Token: token, Results: results})
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
