package node_test

import (
	"fmt"
	"testing"

	"github.com/narad/narad/core/node"
)

// The accept path is a pure hash (or pin): a produce for a partition whose owner is dead
// is still answered 202 into the WAL with that partition; the dispatcher then reroutes
// the record to a live sibling, where it is consumed.
func TestDeadOwnersPartitionReroutes(t *testing.T) {
	c := newCluster(t, 3)
	c.advance(5_000_000_000)
	l := c.leader()
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "rr", Partitions: u32(3)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.advance(1_000_000_000)
	victim := (l + 1) % 3
	producer := (l + 2) % 3
	var q int64 = -1
	r := c.do(producer, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "rr") })
	for _, ps := range r.Stats {
		if ps.OwnerNode == fmt.Sprint(victim+1) {
			q = int64(ps.Index)
		}
	}
	if q < 0 {
		t.Fatalf("node %d owns no partition: %+v", victim+1, r.Stats)
	}
	c.cut[uint64(victim+1)] = true
	c.advance(8_000_000_000) // the controller marks it dead after 5 s
	r = c.do(producer, func(nd *node.Node, now int64, tok uint64) {
		nd.Produce(now, tok, "rr", []node.ProduceMessage{{Partition: q, Payload: []byte("to a dead owner")}})
	})
	if r.Err != nil || r.Accepted != 1 {
		t.Fatalf("a produce pinned to the dead owner's partition %d must still be accepted: %+v", q, r)
	}
	c.advance(2_000_000_000)
	r = c.do(producer, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "rr", Partition: -1, Max: 10})
	})
	if r.Err != nil || len(r.Messages) != 1 || int64(r.Messages[0].Partition) == q {
		t.Fatalf("the record should be consumed from a live sibling of partition %d: %+v", q, r)
	}
	if got := c.nodes[producer].Stats().Dispatch.Rerouted; got != 1 {
		t.Fatalf("rerouted %d, want 1", got)
	}
}
