package node_test

import (
	"testing"

	"github.com/narad/narad/core/node"
)

// A node outside the initial voters joins: its heartbeats reach the leader, which makes
// it a member and a raft learner; it then has the metastore's state, owns partitions of
// topics created after it joined, takes writes (forwarded) and serves its partitions.
func TestNodeJoinsAsLearner(t *testing.T) {
	c := newClusterOf(t, 4, 3)
	c.advance(8_000_000_000)
	l := c.leader()
	if l < 0 || l == 3 {
		t.Fatalf("leader %d: want one of the three voters", l+1)
	}
	r := c.do(3, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
	if r.Err != nil || len(r.Members) != 4 {
		t.Fatalf("members on the joiner: %+v", r)
	}
	r = c.do(3, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "j", Partitions: u32(4)})
	})
	if r.Err != nil {
		t.Fatalf("create through the joiner: %v", r.Err)
	}
	c.advance(1_000_000_000)
	r = c.do(0, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
	for _, m := range r.Members {
		if m.OwnedPartitions != 1 || !m.Alive {
			t.Fatalf("partitions not spread over the four members: %+v", r.Members)
		}
	}
	for p := int64(0); p < 4; p++ {
		if r := c.do(int(p), func(nd *node.Node, now int64, tok uint64) {
			nd.Produce(now, tok, "j", []node.ProduceMessage{{Partition: p, Payload: []byte("x")}})
		}); r.Err != nil {
			t.Fatalf("produce on node %d: %v", p+1, r.Err)
		}
	}
	c.advance(1_000_000_000)
	got := 0
	for range 8 {
		r := c.do(3, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Topic: "j", Partition: -1, Max: 10})
		})
		got += len(r.Messages)
	}
	if got != 4 {
		t.Fatalf("consumed %d of 4 through the joiner", got)
	}
}

// A cluster grown from one node: the leader makes the two joiners voters (VotersTarget
// is 3 for three members) in one joint change, and the metastore then survives the loss
// of any one node, the first included.
func TestClusterGrownFromOneNodeGetsThreeVoters(t *testing.T) {
	c := newClusterOf(t, 3, 1)
	c.advance(8_000_000_000)
	r := c.do(0, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
	if r.Err != nil || len(r.Members) != 3 {
		t.Fatalf("members: %+v", r)
	}
	for _, m := range r.Members {
		if !m.Voter {
			t.Fatalf("member %d is not a voter: %+v", m.ID, r.Members)
		}
	}
	c.cut[1] = true // the first node, which led alone at the start
	c.advance(5_000_000_000)
	l := c.awaitLeader(10_000_000_000)
	if l == 0 {
		t.Fatalf("the cut node still leads")
	}
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "after", Partitions: u32(1)})
	}); r.Err != nil {
		t.Fatalf("two of three voters refuse a write: %v", r.Err)
	}
}
