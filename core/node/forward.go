package node

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/wire"
)

// Topic writes made on a follower are forwarded to the metastore leader as a
// ProposeRequest; the leader proposes them as its own and answers with a ProposeResponse
// once applied. The follower then asks its replica for a barrier (ReadIndex), so that
// the client is answered only after the local replica applied the write, and reads the
// topic back from it. A forward without an answer within ForwardTimeoutNs is answered
// ErrNotReady (503: its outcome is unknown, as any timed-out write).
//
// The network may deliver a ProposeRequest again, long after, to the leader of a later
// term or to another leader, which proposes what reaches it. So the command carries a
// meta.ProposalID: this member, this process's nonce (the in-flight table's peer base,
// drawn per process), the request id (increasing within the process) and the commit
// index the replica holds durable (which orders the member's processes); the replicated
// state applies one id at most once (core/meta forwards.go). A copy is answered OK when
// the write's first copy applied without an error (the follower then waits for its
// barrier as for any applied write), else ProposeFailed (503); a copy's answer to a call
// answered already matches nothing.

// ForwardTimeoutNs bounds the wait for the leader's answer to a forwarded write.
const ForwardTimeoutNs = 10_000_000_000

// forwardOp is a forwarded topic write the leader applied, waiting for the local barrier.
type forwardOp struct {
	token uint64 // the client's
	cmd   meta.Command
}

// peerProposal is a proposal this leader makes for a follower.
type peerProposal struct {
	from, id uint64
}

// forward sends cmd to the metastore leader for the client request token, as a call
// (calls.go): no answer within ForwardTimeoutNs is ErrNotReady.
func (n *Node) forward(nowNs int64, token, leader uint64, cmd meta.Command) {
	n.call(
		nowNs,
		leader,
		ForwardTimeoutNs,
		func(id uint64) wire.Message {
			fid := meta.ProposalID{Origin: n.meta.ID(), Nonce: n.inflight.peerBase, Seq: id,
				Commit: n.meta.DurableCommit()}
			return wire.ProposeRequest{ID: id, Command: meta.EncodeForward(cmd, fid)}
		},
		func(now int64, m wire.Message) { n.onForwarded(now, forwardOp{token: token, cmd: cmd}, m) },
	)
}

// onProposeRequest proposes a follower's write when this node leads the metastore.
func (n *Node) onProposeRequest(nowNs int64, from uint64, m wire.ProposeRequest) {
	cmd, fid, err := meta.DecodeForward(m.Command)
	switch {
	case err != nil:
		n.send(
			from,
			wire.ProposeResponse{ID: m.ID, Code: wire.ProposeInvalid, Reason: "undecodable command"},
		)
		return
	case !fid.IsZero() && (fid.Origin != from || fid.Seq != m.ID):
		n.send(from, wire.ProposeResponse{ID: m.ID, Code: wire.ProposeInvalid,
			Reason: "the forward's id names another sender or request"})
		return
	case n.meta.LeaderID() != n.meta.ID():
		n.send(from, wire.ProposeResponse{ID: m.ID, Code: wire.ProposeNotLeader})
		return
	}
	id := n.inflight.add(entry{purpose: forPeerProposal, proposal: peerProposal{from: from, id: m.ID}})
	n.meta.ProposeForwarded(nowNs, id, cmd, fid) // a zero fid (a peer of an older version): no id
}

// answerPeerProposal sends the outcome of a follower's write back to it.
func (n *Node) answerPeerProposal(pp peerProposal, err error) {
	code, reason := proposeCode(err)
	n.send(pp.from, wire.ProposeResponse{ID: pp.id, Code: code, Reason: reason})
}

func proposeCode(err error) (wire.ProposeCode, string) {
	switch {
	case err == nil, errors.Is(err, meta.ErrDuplicate): // a copy of a write applied: it is done
		return wire.ProposeOK, ""
	case errors.Is(err, meta.ErrStale):
		return wire.ProposeFailed, truncate(err.Error(), wire.ReasonBytesMax)
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
	case errors.Is(err, meta.ErrForbidden):
		return wire.ProposeForbidden, ""
	case errors.Is(err, meta.ErrUserExists):
		return wire.ProposeUserExists, ""
	case errors.Is(err, meta.ErrUserNotFound):
		return wire.ProposeUserNotFound, ""
	case errors.Is(err, meta.ErrNoMember):
		return wire.ProposeNoMember, ""
	case errors.Is(err, meta.ErrNoMove):
		return wire.ProposeNoMove, truncate(err.Error(), wire.ReasonBytesMax)
	case isRefusal(err):
		return wire.ProposeRefused, truncate(err.Error(), wire.ReasonBytesMax)
	}
	return wire.ProposeFailed, truncate(err.Error(), wire.ReasonBytesMax)
}

func truncate(s string, n int) string { return s[:min(len(s), n)] }

// onForwarded takes the leader's answer (nil: none in time): an applied write waits for
// the local barrier; anything else answers the client now.
func (n *Node) onForwarded(nowNs int64, f forwardOp, m wire.Message) {
	r, ok := m.(wire.ProposeResponse)
	switch {
	case !ok:
		n.respond(
			Response{
				Token: f.token,
				Err: fmt.Errorf(
					"%w: the metastore leader did not answer in time (the write may be done)",
					ErrNotReady,
				),
			},
		)
	case r.Code != wire.ProposeOK:
		n.respond(Response{Token: f.token, Err: forwardError(r)})
	default:
		id := n.inflight.add(entry{purpose: forForwardBarrier, forward: f})
		n.meta.Barrier(nowNs, id) // the metastore answers every barrier, in time or not
	}
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
	case wire.ProposeForbidden:
		return ErrForbidden
	case wire.ProposeUserExists:
		return ErrUserExists
	case wire.ProposeUserNotFound:
		return ErrUserNotFound
	case wire.ProposeNoMember:
		return ErrMemberNotFound
	case wire.ProposeNoMove:
		return fmt.Errorf("%w: %s", ErrMoveNotFound, m.Reason)
	case wire.ProposeRefused:
		return fmt.Errorf("%w: %s", ErrRefused, m.Reason)
	}
	return fmt.Errorf("%w: the metastore leader failed the write: %s", ErrNotReady, m.Reason)
}

// onForwardBarrier answers a forwarded write once the local replica applied it.
func (n *Node) onForwardBarrier(token uint64, err error) {
	e, ok := n.inflight.take(token, forForwardBarrier)
	if !ok {
		return
	}
	f := e.forward
	if err != nil {
		n.respond(
			Response{
				Token: f.token,
				Err: fmt.Errorf(
					"%w: the write is done, the local replica not confirmed: %v",
					ErrNotReady,
					err,
				),
			},
		)
		return
	}
	if f.cmd.Kind == meta.DeleteTopic || f.cmd.Kind == meta.DeleteUser ||
		f.cmd.Kind == meta.ForgetMember || f.cmd.Kind == meta.DecommissionMember ||
		f.cmd.Kind == meta.CancelDecommission || f.cmd.Name == "" && f.cmd.Username == "" {
		// (a member's or a move's command names no topic or user to answer with)
		n.respond(Response{Token: f.token})
		return
	}
	if f.cmd.Username != "" {
		u, ok := n.meta.User(f.cmd.Username)
		if !ok {
			n.respond(Response{Token: f.token, Err: ErrUserNotFound}) // deleted again since
			return
		}
		n.respond(Response{Token: f.token, User: apiUser(u)})
		return
	}
	t, ok := n.meta.Topic(f.cmd.Name)
	if !ok {
		n.respond(Response{Token: f.token, Err: ErrTopicNotFound}) // deleted again since
		return
	}
	n.respond(Response{Token: f.token, Topic: apiTopic(t)})
}
