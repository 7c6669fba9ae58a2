package node

import (
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/narad/narad/core/wire"
)

// DefaultHeartbeatIntervalNs: how often a node tells the metastore leader it is alive.
const DefaultHeartbeatIntervalNs = 500_000_000

// Outbound is a message for peer To, in its wire form (core/wire).
type Outbound struct {
	To   uint64
	Body []byte
}

// Receive feeds the body of a message peer from sent (the transport authenticated from).
// A body that does not decode, or claims another sender, is dropped: peers are best
// effort, and raft and the heartbeats repeat what matters.
func (n *Node) Receive(nowNs int64, from uint64, body []byte) {
	m, err := wire.Decode(body)
	if err != nil {
		return
	}
	switch m := m.(type) {
	case wire.Raft:
		var rm raftpb.Message
		if proto.Unmarshal(m.Data, &rm) == nil && rm.GetFrom() == from {
			n.meta.Step(nowNs, &rm)
			n.onMarksTable(m.Table)
		}
	case wire.Heartbeat:
		n.onHeartbeat(nowNs, from, m)
	case wire.CommitRequest:
		n.onCommitRequest(nowNs, from, m)
	case wire.CommitResponse:
		n.onCommitResponse(nowNs, from, m)
	case wire.ConsumeRequest:
		n.onConsumeRequest(nowNs, from, m)
	case wire.ConsumeResponse:
		n.answered(nowNs, from, m.ID, m)
	case wire.ConsumeCancel:
		n.onConsumeCancel(from, m)
	case wire.AckRequest:
		n.onAckRequest(nowNs, from, m)
	case wire.AckResponse:
		n.answered(nowNs, from, m.ID, m)
	case wire.Hello:
		n.onHello(nowNs, from, m)
	case wire.Forgotten:
		n.onForgotten(from, m)
	case wire.StatsRequest:
		n.onStatsRequest(nowNs, from, m)
	case wire.StatsResponse:
		n.answered(nowNs, from, m.ID, m)
	case wire.ProposeRequest:
		n.onProposeRequest(nowNs, from, m)
	case wire.ProposeResponse:
		n.answered(nowNs, from, m.ID, m)
	case wire.FetchRequest:
		n.onFetchRequest(nowNs, from, m)
	case wire.FetchResponse:
		n.answered(nowNs, from, m.ID, m)
	}
	n.collect(nowNs)
}

// send queues m for peer to.
func (n *Node) send(to uint64, m wire.Message) {
	b, err := wire.Encode(nil, m)
	if err != nil {
		return // over a bound: never sent (raft bounds its messages far below)
	}
	n.out.Messages = append(n.out.Messages, Outbound{To: to, Body: b})
}

// sendRaft carries the metastore's raft messages to their peers.
func (n *Node) sendRaft(nowNs int64, msgs []*raftpb.Message) {
	for _, m := range msgs {
		data, err := proto.Marshal(m)
		if err == nil {
			n.send(m.GetTo(), wire.Raft{Data: data, Table: n.tableFor(nowNs, m.GetTo())})
		}
	}
}

// heartbeat tells the metastore leader this node is alive and where it is reached; a
// leader tells its own replica. It is how a node joins the members (the leader's
// controller proposes the join when it hears a node that is not one, and adds a node
// outside the initial voters to raft as a learner), so a node without an address sends
// none. Knowing no leader, it tells every initial voter.
func (n *Node) heartbeat(nowNs int64) {
	if n.cfg.Addr == "" || !n.metaReady || nowNs < n.nextHeartbeatNs {
		return
	}
	n.nextHeartbeatNs = nowNs + n.heartbeatInterval()
	if n.peers.hellos < hellosSent {
		n.peers.hellos++
		n.hello()
	}
	self := n.meta.ID()
	n.pruneMarks()
	hb := wire.Heartbeat{From: self, Addr: n.cfg.Addr, Marks: n.ownMarks()}
	switch leader := n.meta.LeaderID(); leader {
	case 0: // a joiner (or an election): the initial voters, one of which leads
		for _, v := range n.cfg.Meta.Voters {
			if v != self {
				n.send(v, hb)
			}
		}
	case self:
		n.meta.Heartbeat(nowNs, self, n.cfg.Addr)
		n.recordMarks(self, hb.Marks)
	default:
		n.send(leader, hb)
	}
}

// onHeartbeat records a peer's heartbeat for the metastore controller, and relays to
// the leader the heartbeat of a node outside the raft configuration: such a node (a
// joiner, not yet a learner) knows no leader and heartbeats the initial voters only, and
// the leader may be none of them (a promoted learner, core/meta promote.go). The leader
// takes a relayed heartbeat from a member, for a node outside the configuration.
func (n *Node) onHeartbeat(nowNs int64, from uint64, m wire.Heartbeat) {
	switch {
	case m.From == from && n.meta.IsForgotten(from) && !mutNoForgottenStop:
		n.send(from, wire.Forgotten{Member: from, Removed: n.meta.IsRemoved(from)}) // it must stop
	case m.From == from:
		n.meta.Heartbeat(nowNs, m.From, m.Addr)
		n.recordMarks(m.From, m.Marks)
		leader := n.meta.LeaderID()
		if leader != 0 && leader != n.meta.ID() && !n.meta.InConf(m.From) && !mutNoRelay {
			n.send(leader, m)
		}
	case n.meta.IsMember(from) && !n.meta.InConf(m.From):
		n.meta.Heartbeat(nowNs, m.From, m.Addr)
		n.recordMarks(m.From, m.Marks)
	}
}

func (n *Node) heartbeatInterval() int64 {
	if n.cfg.HeartbeatIntervalNs > 0 {
		return n.cfg.HeartbeatIntervalNs
	}
	return DefaultHeartbeatIntervalNs
}

// heartbeatDeadline is when the next heartbeat is due, for NextDeadline.
func (n *Node) heartbeatDeadline() (int64, bool) {
	if n.cfg.Addr == "" || !n.metaReady {
		return 0, false
	}
	return n.nextHeartbeatNs, true
}

// SendFailed tells the node that the shell could not send body (a message of its Ready)
// to peer to: the send failed at the sender (no connection yet, a stream reset), so the
// peer never got it. A remote commit or a call it carried fails at once, as if answered
// "retry" (the dispatcher backs off FailureBackoffNs and sends it again), instead of
// waiting for its timeout: a commit sent before the connection to its owner is up must
// not hold its records for the 30 s commit timeout. Other messages need nothing: raft
// and the heartbeats repeat.
func (n *Node) SendFailed(nowNs int64, to uint64, body []byte) {
	if mutSendFailSilent {
		return // the bug: the dispatcher waits for the commit timeout
	}
	m, err := wire.Decode(body)
	if err != nil {
		return
	}
	switch m := m.(type) {
	case wire.CommitRequest:
		n.failRemote(nowNs, m.ID, to)
	case wire.ConsumeRequest:
		n.failCall(nowNs, m.ID, to)
	case wire.AckRequest:
		n.failCall(nowNs, m.ID, to)
	case wire.StatsRequest:
		n.failCall(nowNs, m.ID, to)
	case wire.ProposeRequest:
		n.failCall(nowNs, m.ID, to)
	}
	n.collect(nowNs)
}

// PeerReset tells the node that its connection to peer ended (the transport saw it
// close, time out, or be replaced by a new one): what was in flight on it, either way,
// may be lost, so every remote commit and call to peer fails at once, as after a Hello.
// Sending them again is a duplicate at most, as after a timeout.
func (n *Node) PeerReset(nowNs int64, peer uint64) {
	n.failPeer(nowNs, peer)
	n.collect(nowNs)
}
