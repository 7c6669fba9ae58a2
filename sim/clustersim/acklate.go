package clustersim

import (
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// A routed ack may reach its owner long after it was sent: the network drops the first
// copy and delivers a stale one later (a connection's retransmission, in life). Its owner
// rightly answers "gone" for a lease that expired meanwhile, so invariant 9 judges a
// routed ack by when it arrived, not only by when it was sent.

// ackArrival names the ack of one lease (its receipt handle) in one mode.
type ackArrival struct {
	handle string
	mode   node.AckMode
}

// ackArrived notes, for each handle of a routed ack arriving at mb, when it arrived.
func (u *run) ackArrived(body []byte) {
	if len(body) < 2 {
		return
	}
	if k := wire.Kind(body[1]); k != wire.KindAckRequest && k != wire.KindAckRequestAs {
		return
	}
	m, err := wire.Decode(body)
	if err != nil {
		return
	}
	a := m.(wire.AckRequest)
	for _, h := range a.Handles {
		u.ackArrivals[ackArrival{handle: h, mode: node.AckMode(a.Mode)}] = u.s.Now()
	}
}

// ackReachedNs is the latest time an ack of handle in req's mode, sent at req.callNs,
// can have reached its owner: the network's slack, or later when a copy of it arrived
// later.
func (u *run) ackReachedNs(handle string, req request) int64 {
	at := req.callNs + u.netSlackNs()
	if late, ok := u.ackArrivals[ackArrival{handle: handle, mode: req.mode}]; ok && late > at {
		return late
	}
	return at
}
