package node

import (
	"fmt"

	"github.com/narad/narad/core/meta"
)

// The moves as clients see them: start one, abort one, list them (GET /v1/cluster/moves).

// MoveInfo is a move in progress, as GET /v1/cluster/moves shows it.
type MoveInfo struct {
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	From      uint64 `json:"from"`
	To        uint64 `json:"to"`
	State     string `json:"state"` // "copying" or "frozen"
	Epoch     uint32 `json:"epoch"`
}

// ListMoves answers the moves in progress (Response.Moves).
func (n *Node) ListMoves(nowNs int64, token uint64) {
	n.checkToken(token)
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
	} else {
		n.respond(Response{Token: token, Moves: n.Moves()})
	}
	n.collect(nowNs)
}

// Moves lists the moves in progress on this node's replica, by topic id then partition.
func (n *Node) Moves() []MoveInfo {
	var out []MoveInfo
	for _, mv := range n.meta.Moves() {
		t, ok := n.meta.TopicByID(mv.TopicID)
		if !ok {
			continue
		}
		out = append(out, MoveInfo{Topic: t.Name, Partition: mv.Partition, From: mv.From,
			To: mv.To, State: mv.State.String(), Epoch: mv.Epoch})
	}
	return out
}

// MovePartition starts a move of partition part of topic to member to (the metastore
// checks it: a live source and destination, no move of it yet).
func (n *Node) MovePartition(nowNs int64, token uint64, topic string, part uint32, to uint64) {
	n.proposeForPartition(nowNs, token, topic, part, meta.Command{Kind: meta.StartMove, Member: to})
}

// Rebalance asks the metastore leader to even out the partitions over the members that
// take them (the controller's moves, at most meta.MovesInFlightMax at once; ListMoves
// shows them).
func (n *Node) Rebalance(nowNs int64, token uint64) {
	n.propose(nowNs, token, meta.Command{Kind: meta.Rebalance})
}

// AbortMove ends the move of partition part of topic before its cutover: the source keeps
// it. ErrMoveNotFound when none is in progress.
func (n *Node) AbortMove(nowNs int64, token uint64, topic string, part uint32) {
	n.proposeForPartition(nowNs, token, topic, part, meta.Command{Kind: meta.AbortMove})
}

func (n *Node) proposeForPartition(nowNs int64, token uint64, topic string, part uint32,
	cmd meta.Command) {
	n.checkToken(token)
	t, ok := n.meta.Topic(topic)
	switch {
	case !ok:
		n.respond(Response{Token: token, Err: ErrTopicNotFound})
		n.collect(nowNs)
		return
	case part >= t.Partitions:
		n.respond(Response{Token: token, Err: fmt.Errorf("%w: topic %q has %d partitions",
			ErrPartitionRange, topic, t.Partitions)})
		n.collect(nowNs)
		return
	}
	cmd.TopicID, cmd.Part = t.ID, part
	n.propose(nowNs, token, cmd)
}
