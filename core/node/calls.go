package node

import (
	"github.com/narad/narad/core/wire"

	"github.com/narad/narad/core/assert"
)

// Requests to peers (routed consumes and acks) are calls: a message carrying a request
// id, answered by a message carrying the same id, or by nothing before a deadline (the
// continuation then gets nil). Ids start at a random base per process, so an answer
// meant for an earlier process matches nothing.
//
// Work the node does for itself through its own request paths (a consume it serves for
// a peer or for a routed client consume) gets an internal token; its Response goes to a
// continuation, run by collect, instead of to the shell.

// call sends the request build makes (with a fresh id) to peer to.
func (n *Node) call(
	nowNs int64,
	to uint64,
	timeoutNs int64,
	build func(id uint64) wire.Message,
	done func(int64, wire.Message),
) {
	id := n.peerID(entry{purpose: forCall, peer: to, deadline: nowNs + timeoutNs, done: done})
	n.send(to, build(id))
}

// answered feeds a peer's answer to the call it answers.
func (n *Node) answered(nowNs int64, from, wireID uint64, m wire.Message) {
	id, ok := n.inflight.peerEntry(wireID, forCall, from)
	if !ok {
		return // a duplicate, a late answer, or one meant for an earlier process
	}
	e, _ := n.inflight.take(id, forCall)
	e.done(nowNs, m)
}

// failCall gives up on the call with wireID to peer: its request was never sent.
func (n *Node) failCall(nowNs int64, wireID, peer uint64) {
	if id, ok := n.inflight.peerEntry(wireID, forCall, peer); ok {
		e, _ := n.inflight.take(id, forCall)
		e.done(nowNs, nil)
	}
}

// internal returns a token whose Response goes to then.
func (n *Node) internal(then func(nowNs int64, r Response)) uint64 {
	return n.inflight.add(entry{purpose: forInternal, then: then})
}

// checkToken asserts that a request's token is a client's (without idTag) or one of the
// node's internal requests (inflight.go): the shell's tokens never carry the tag.
func (n *Node) checkToken(token uint64) {
	assert.That(token&idTag == 0 || n.inflight.purposeOf(token) == forInternal,
		"node: a client token carries the node's id tag")
}

// respond answers a client, or queues an internal Response for its continuation (none
// when the node gave the request up: dropParked).
func (n *Node) respond(r Response) {
	if r.Token&idTag != 0 {
		p := n.inflight.purposeOf(r.Token)
		assert.That(p == forInternal || p == 0, "node: a Response to an id that is no request")
		n.internalDone = append(n.internalDone, r)
		return
	}
	n.out.Responses = append(n.out.Responses, r)
}

// runInternal runs the continuations of the internal Responses queued.
func (n *Node) runInternal(nowNs int64) bool {
	moved := len(n.internalDone) > 0
	for len(n.internalDone) > 0 {
		r := n.internalDone[0]
		n.internalDone = n.internalDone[1:]
		if e, ok := n.inflight.take(r.Token, forInternal); ok {
			e.then(nowNs, r)
		}
	}
	return moved
}
