package node_test

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// raftEntriesTo is a drop rule that loses the raft messages to node id that carry log
// entries or a snapshot, and lets its heartbeats through: the node knows the leader and
// applies everything it holds, but never hears of what it missed.
func raftEntriesTo(id uint64) func(from, to uint64, body []byte) bool {
	return func(from, to uint64, body []byte) bool {
		if to != id {
			return false
		}
		m, err := wire.Decode(body)
		r, ok := m.(wire.Raft)
		if err != nil || !ok {
			return false
		}
		var rm raftpb.Message
		if proto.Unmarshal(r.Data, &rm) != nil {
			return false
		}
		return rm.GetType() == raftpb.MsgApp || rm.GetType() == raftpb.MsgSnap
	}
}

// A follower restarted after missing topic writes serves requests once it knows the
// leader, but is ready in the sense of /readyz only once its replica applied what the
// leader had committed: its own commit index says nothing of what it missed.
func TestRestartedFollowerReadyOnlyOnceCaughtUp(t *testing.T) {
	c := newCluster(t, 3)
	l := c.awaitLeader(10_000_000_000)
	c.advance(1_000_000_000)
	for i, nd := range c.nodes {
		if err := nd.Readiness(); err != nil {
			t.Fatalf("node %d of a formed cluster not ready: %v", i+1, err)
		}
	}
	f := (l + 1) % 3
	c.cut[uint64(f+1)] = true
	for i := range 5 {
		r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
			nd.CreateTopic(now, tok, node.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: u32(1)})
		})
		if r.Err != nil {
			t.Fatalf("create t%d: %v", i, r.Err)
		}
	}
	c.restart(f)
	delete(c.cut, uint64(f+1))
	c.drop = raftEntriesTo(uint64(f + 1))
	c.advance(3_000_000_000)

	nd := c.nodes[f]
	if err := nd.IsReady(); err != nil {
		t.Fatalf("the restarted follower knows the leader but does not serve: %v", err)
	}
	if behind, lead := nd.MetastoreApplied(), c.nodes[l].MetastoreApplied(); behind >= lead {
		t.Fatalf("setup: the follower applied %d, the leader %d: it missed nothing", behind, lead)
	}
	if err := nd.Readiness(); !errors.Is(err, node.ErrNotReady) {
		t.Fatalf("a follower behind the leader's commit is ready: %v", err)
	}

	c.drop = nil
	c.advance(2_000_000_000)
	if err := nd.Readiness(); err != nil {
		t.Fatalf("the follower caught up but is not ready: %v", err)
	}
	if got, want := nd.MetastoreApplied(), c.nodes[l].MetastoreApplied(); got < want {
		t.Fatalf("ready at index %d, the leader applied %d", got, want)
	}
}

// raftTypeTo reports whether body is a raft message of type typ to node id, and returns
// it.
func raftTypeTo(id uint64, typ raftpb.MessageType, to uint64, body []byte) bool {
	if to != id {
		return false
	}
	m, err := wire.Decode(body)
	r, ok := m.(wire.Raft)
	var rm raftpb.Message
	return err == nil && ok && proto.Unmarshal(r.Data, &rm) == nil && rm.GetType() == typ
}

// A late answer to a read request of a node's earlier process must not confirm a
// barrier of its new one: raft hands any MsgReadIndexResp over as a ReadState, and if
// both processes numbered their barriers alike, the stale (lower) index would make the
// restarted node ready behind the leader (cluster seed 966 of narad-sim).
func TestLateReadAnswerOfAnEarlierProcessConfirmsNothing(t *testing.T) {
	c := newCluster(t, 3)
	l := c.awaitLeader(10_000_000_000)
	f := (l + 1) % 3
	id := uint64(f + 1)
	var stale []envelope
	c.drop = func(from, to uint64, body []byte) bool {
		if raftTypeTo(id, raftpb.MsgReadIndexResp, to, body) {
			stale = append(stale, envelope{from: from, out: node.Outbound{To: to, Body: body}})
		}
		return false
	}
	c.restart(f) // its catch-up barrier's answer is captured
	c.advance(2_000_000_000)
	if len(stale) == 0 {
		t.Fatal("setup: no read index answer reached the follower")
	}
	entries := raftEntriesTo(id)
	c.drop = func(from, to uint64, body []byte) bool { // nothing new reaches the follower
		return entries(from, to, body) || raftTypeTo(id, raftpb.MsgReadIndexResp, to, body)
	}
	for i := range 5 {
		if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
			nd.CreateTopic(now, tok, node.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: u32(1)})
		}); r.Err != nil {
			t.Fatalf("create t%d: %v", i, r.Err)
		}
	}
	c.restart(f)
	c.advance(1_000_000_000) // it knows the leader and waits for its catch-up barrier
	if err := c.nodes[f].IsReady(); err != nil {
		t.Fatalf("setup: the restarted follower does not serve: %v", err)
	}
	for _, e := range stale { // the network delivers the earlier process's answer late
		c.nodes[f].Receive(c.now, e.from, e.out.Body)
	}
	c.advance(100_000_000)
	nd := c.nodes[f]
	if behind, lead := nd.MetastoreApplied(), c.nodes[l].MetastoreApplied(); behind >= lead {
		t.Fatalf("setup: the follower applied %d, the leader %d: it missed nothing", behind, lead)
	}
	if err := nd.Readiness(); err == nil {
		t.Fatalf("ready at index %d behind the leader's %d on an earlier process's read answer",
			nd.MetastoreApplied(), c.nodes[l].MetastoreApplied())
	}
}
