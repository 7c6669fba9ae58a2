package node_test

import (
	"fmt"
	"testing"

	"github.com/narad/narad/core/node"
)

// A remote commit whose send fails at the sender (no connection to the owner yet, a
// stream reset) fails at once: the dispatcher backs off (1 s) and sends it again, so the
// record is consumable about a second later, not after the 30 s commit timeout (the
// stall a chaos run found after two nodes restarted together).
func TestFailedSendRetriesAfterTheBackoff(t *testing.T) {
	c := newCluster(t, 3)
	c.advance(5_000_000_000)
	l := c.leader()
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "sf", Partitions: u32(3)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.advance(1_000_000_000)
	owner, producer := (l+1)%3, (l+2)%3
	var q int64 = -1
	r := c.do(producer, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "sf") })
	for _, ps := range r.Stats {
		if ps.OwnerNode == fmt.Sprint(owner+1) {
			q = int64(ps.Index)
		}
	}
	if q < 0 {
		t.Fatalf("node %d owns no partition: %+v", owner+1, r.Stats)
	}
	c.failNext[[2]uint64{uint64(producer + 1), uint64(owner + 1)}] = 1
	r = c.do(producer, func(nd *node.Node, now int64, tok uint64) {
		nd.Produce(now, tok, "sf", []node.ProduceMessage{{Partition: q, Payload: []byte("sent twice")}})
	})
	if r.Err != nil || r.Accepted != 1 {
		t.Fatalf("produce: %+v", r)
	}
	if left := c.failNext[[2]uint64{uint64(producer + 1), uint64(owner + 1)}]; left != 0 {
		t.Fatalf("the commit was never sent to the owner")
	}
	c.advance(1_500_000_000) // the backoff, not the 30 s commit timeout
	r = c.do(owner, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "sf", Partition: q, Max: 10})
	})
	if r.Err != nil || len(r.Messages) != 1 || string(r.Messages[0].Payload) != "sent twice" {
		t.Fatalf("the record should be on partition %d 1.5 s after its failed send: %+v", q, r)
	}
}

// A reset connection fails the commits sent over it: the peer may never have got them.
func TestPeerResetFailsOpenCommits(t *testing.T) {
	c := newCluster(t, 3)
	c.advance(5_000_000_000)
	l := c.leader()
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "pr", Partitions: u32(3)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.advance(1_000_000_000)
	owner, producer := (l+1)%3, (l+2)%3
	var q int64 = -1
	r := c.do(producer, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "pr") })
	for _, ps := range r.Stats {
		if ps.OwnerNode == fmt.Sprint(owner+1) {
			q = int64(ps.Index)
		}
	}
	c.cut[uint64(owner+1)] = true // the commit is lost in flight
	r = c.do(producer, func(nd *node.Node, now int64, tok uint64) {
		nd.Produce(now, tok, "pr", []node.ProduceMessage{{Partition: q, Payload: []byte("lost once")}})
	})
	if r.Err != nil || r.Accepted != 1 {
		t.Fatalf("produce: %+v", r)
	}
	c.advance(100_000_000)
	c.cut[uint64(owner+1)] = false
	c.nodes[producer].PeerReset(c.now, uint64(owner+1))
	c.advance(1_500_000_000)
	r = c.do(owner, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "pr", Partition: q, Max: 10})
	})
	if r.Err != nil || len(r.Messages) != 1 {
		t.Fatalf("the record should be on partition %d 1.5 s after the reset: %+v", q, r)
	}
}
