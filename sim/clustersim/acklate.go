package clustersim

import (
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// A routed ack may reach its owner long after it was sent: the network drops the first
// copy and delivers a stale one later (a connection's retransmission, in life). Its owner
// rightly answers "gone" for a lease that expired meanwhile, so invariant 9 judges a
// routed ack by when it arrived, not only by when it was sent.

// ackArrival names the ack of one record in one mode.
type ackArrival struct {
	rec  recKey
	mode node.AckMode
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
		if rec, ok := u.m.handles[h]; ok {
			u.ackArrivals[ackArrival{rec: rec, mode: node.AckMode(a.Mode)}] = u.s.Now()
		}
	}
}

// ackReachedNs is the latest time an ack of k in mode, sent at req.callNs, can have
// reached its owner: the network's slack, or later when a copy of it arrived later.
func (u *run) ackReachedNs(k recKey, req request) int64 {
	at := req.callNs + u.netSlackNs()
	if late, ok := u.ackArrivals[ackArrival{rec: k, mode: req.mode}]; ok && late > at {
		return late
	}
	return at
}
