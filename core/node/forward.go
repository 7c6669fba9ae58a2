package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/wire"
)

// Topic writes made on a follower are forwarded to the metastore leader as a
// ProposeRequest; the leader proposes them as its own and answers with a ProposeResponse
// once applied. The follower then asks its replica for a barrier (ReadIndex), so that
// the client is answered only after the local replica applied the write, and reads the
// topic back from it. A forward without an answer within ForwardTimeoutNs is answered
// ErrNotReady (503: its outcome is unknown, as any timed-out write).

// ForwardTimeoutNs bounds the wait for the leader's answer to a forwarded write.
const ForwardTimeoutNs = 10_000_000_000

// barrierOfForward marks the metastore barrier tokens of forwards (the dispatcher's
// tokens are small counters and never have this bit).
const barrierOfForward = 1 << 63

// forwardOp is a topic write waiting for the leader, then for the local barrier.
type forwardOp struct {
	token    uint64 // the client's
	leader   uint64
	cmd      meta.Command
	deadline int64
}

// peerProposal is a proposal this leader makes for a follower.
type peerProposal struct {
	from, id uint64
}

// forward sends cmd to the metastore leader for the client request token.
func (n *Node) forward(nowNs int64, token, leader uint64, cmd meta.Command) {
	if n.fwdBase == 0 {
		n.fwdBase = n.rand.Uint64() >> 2
	}
	n.nextFwd++
	id := n.fwdBase + n.nextFwd
	n.forwards[id] = &forwardOp{token: token, leader: leader, cmd: cmd, deadline: nowNs + ForwardTimeoutNs}
	n.send(leader, wire.ProposeRequest{ID: id, Command: meta.EncodeCommand(cmd)})
}

// onProposeRequest proposes a follower's write when this node leads the metastore.
func (n *Node) onProposeRequest(nowNs int64, from uint64, m wire.ProposeRequest) {
	cmd, err := meta.DecodeCommand(m.Command)
	switch {
	case err != nil:
		n.send(from, wire.ProposeResponse{ID: m.ID, Code: wire.ProposeInvalid, Reason: "undecodable command"})
		return
	case n.meta.LeaderID() != n.meta.ID():
		n.send(from, wire.ProposeResponse{ID: m.ID, Code: wire.ProposeNotLeader})
		return
	}
	n.nextTk++
	n.peerProposals[n.nextTk] = peerProposal{from: from, id: m.ID}
	n.meta.Propose(nowNs, n.nextTk, cmd)
}

// answerPeerProposal sends the outcome of a follower's write back to it.
func (n *Node) answerPeerProposal(pp peerProposal, err error) {
	code, reason := proposeCode(err)
	n.send(pp.from, wire.ProposeResponse{ID: pp.id, Code: code, Reason: reason})
}

func proposeCode(err error) (wire.ProposeCode, string) {
	switch {
	case err == nil:
		return wire.ProposeOK, ""
	case errors.Is(err, meta.ErrExists):
		return wire.ProposeExists, ""
	case errors.Is(err, meta.ErrNotFound):
		return wire.ProposeNotFound, ""
	case errors.Is(err, meta.ErrInvalid), errors.Is(err, meta.ErrTooManyTopics):
		return wire.ProposeInvalid, truncate(err.Error(), wire.ReasonBytesMax)
	case errors.Is(err, meta.ErrBusy):
		return wire.ProposeBusy, ""
	case errors.Is(err, meta.ErrNotLeader):
		return wire.ProposeNotLeader, ""
	}
	return wire.ProposeFailed, truncate(err.Error(), wire.ReasonBytesMax)
}

func truncate(s string, n int) string { return s[:min(len(s), n)] }

// onProposeResponse takes the leader's answer: an applied write waits for the local
// barrier; a refusal answers the client now.
func (n *Node) onProposeResponse(nowNs int64, from uint64, m wire.ProposeResponse) {
	f, ok := n.forwards[m.ID]
	if !ok || f.leader != from {
		return // a duplicate, a late answer, or one meant for an earlier process
	}
	if m.Code != wire.ProposeOK {
		delete(n.forwards, m.ID)
		n.respond(Response{Token: f.token, Err: forwardError(m)})
		return
	}
	f.deadline = nowNs + ForwardTimeoutNs
	f.leader = 0 // answered: only the barrier is left
	n.meta.Barrier(nowNs, m.ID|barrierOfForward)
}

func forwardError(m wire.ProposeResponse) error {
	switch m.Code {
	case wire.ProposeExists:
		return ErrTopicExists
	case wire.ProposeNotFound:
		return ErrTopicNotFound
	case wire.ProposeInvalid:
		return fmt.Errorf("%w: %s", ErrInvalid, m.Reason)
	case wire.ProposeBusy:
		return fmt.Errorf("%w: the metastore leader is over its proposal bound", ErrBusy)
	case wire.ProposeNotLeader:
		return fmt.Errorf("%w: the metastore leader changed", ErrNotReady)
	}
	return fmt.Errorf("%w: the metastore leader failed the write: %s", ErrNotReady, m.Reason)
}

// onForwardBarrier answers a forwarded write once the local replica applied it.
func (n *Node) onForwardBarrier(token uint64, err error) {
	id := token &^ barrierOfForward
	f, ok := n.forwards[id]
	if !ok || f.leader != 0 {
		return
	}
	delete(n.forwards, id)
	if err != nil {
		n.respond(Response{Token: f.token, Err: fmt.Errorf("%w: the write is done, the local replica not confirmed: %v", ErrNotReady, err)})
		return
	}
	if f.cmd.Kind == meta.DeleteTopic {
		n.respond(Response{Token: f.token})
		return
	}
	t, ok := n.meta.Topic(f.cmd.Name)
	if !ok {
		n.respond(Response{Token: f.token, Err: ErrTopicNotFound}) // deleted again since
		return
	}
	n.respond(Response{Token: f.token, Topic: apiTopic(t)})
}

// expireForwards answers the forwards past their deadline.
func (n *Node) expireForwards(nowNs int64) {
	for _, id := range slices.Sorted(maps.Keys(n.forwards)) {
		if f := n.forwards[id]; nowNs >= f.deadline {
			delete(n.forwards, id)
			n.respond(Response{Token: f.token, Err: fmt.Errorf("%w: the metastore leader did not answer in time (the write may be done)", ErrNotReady)})
		}
	}
}

func (n *Node) forwardDeadline() (int64, bool) {
	var at int64
	for _, f := range n.forwards { //narad:unordered (a minimum)
		if at == 0 || f.deadline < at {
			at = f.deadline
		}
	}
	return at, at != 0
}
