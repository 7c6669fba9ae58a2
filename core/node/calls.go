package node

import (
	"maps"
	"slices"

	"github.com/narad/narad/core/wire"
)

// Requests to peers (routed consumes and acks) are calls: a message carrying a request
// id, answered by a message carrying the same id, or by nothing before a deadline (the
// continuation then gets nil). Ids start at a random base per process, so an answer
// meant for an earlier process matches nothing.
//
// Work the node does for itself through its own request paths (a consume it serves for
// a peer or for a routed client consume) gets an internal token; its Response goes to a
// continuation, run by collect, instead of to the shell.

// internalToken marks internal tokens (the shell's tokens never have this bit).
const internalToken = 1 << 62

type peerCall struct {
	to       uint64
	deadline int64
	done     func(nowNs int64, m wire.Message) // m nil: no answer in time
}

// call sends the request build makes (with a fresh id) to peer to.
func (n *Node) call(
	nowNs int64,
	to uint64,
	timeoutNs int64,
	build func(id uint64) wire.Message,
	done func(int64, wire.Message),
) {
	if n.callBase == 0 {
		n.callBase = n.rand.Uint64() >> 2
	}
	n.nextCall++
	id := n.callBase + n.nextCall
	n.calls[id] = &peerCall{to: to, deadline: nowNs + timeoutNs, done: done}
	n.send(to, build(id))
}

// answered feeds a peer's answer to the call with id.
func (n *Node) answered(nowNs int64, from, id uint64, m wire.Message) {
	c, ok := n.calls[id]
	if !ok || c.to != from {
		return // a duplicate, a late answer, or one meant for an earlier process
	}
	delete(n.calls, id)
	c.done(nowNs, m)
}

// expireCalls gives up on the calls past their deadline.
func (n *Node) expireCalls(nowNs int64) {
	n.giveUpCalls(nowNs, func(c *peerCall) bool { return nowNs >= c.deadline })
}

// failCalls gives up on the calls to peer: it restarted (a Hello), and its earlier
// process will answer none of them.
func (n *Node) failCalls(nowNs int64, peer uint64) {
	n.giveUpCalls(nowNs, func(c *peerCall) bool { return c.to == peer })
}

// failCall gives up on the call with id to peer: its request was never sent.
func (n *Node) failCall(nowNs int64, id, peer uint64) {
	if c, ok := n.calls[id]; ok && c.to == peer {
		delete(n.calls, id)
		c.done(nowNs, nil)
	}
}

// giveUpCalls ends the calls which picks, in id order, as unanswered.
func (n *Node) giveUpCalls(nowNs int64, which func(*peerCall) bool) {
	for _, id := range slices.Sorted(maps.Keys(n.calls)) {
		if c, ok := n.calls[id]; ok && which(c) {
			delete(n.calls, id)
			c.done(nowNs, nil)
		}
	}
}

func (n *Node) callDeadline() (int64, bool) {
	var at int64
	for _, c := range n.calls { //narad:unordered (a minimum)
		if at == 0 || c.deadline < at {
			at = c.deadline
		}
	}
	return at, at != 0
}

// internal returns a token whose Response goes to then.
func (n *Node) internal(then func(nowNs int64, r Response)) uint64 {
	n.nextInternal++
	tok := internalToken | n.nextInternal
	n.internals[tok] = then
	return tok
}

// respond answers a client, or queues an internal Response for its continuation.
func (n *Node) respond(r Response) {
	if r.Token&internalToken != 0 {
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
		if then, ok := n.internals[r.Token]; ok {
			delete(n.internals, r.Token)
			then(nowNs, r)
		}
	}
	return moved
}
