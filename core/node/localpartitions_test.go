package node_test

import (
	"fmt"
	"testing"

	"github.com/narad/narad/core/node"
)

// localCluster is 3 nodes, each with Config.ProduceLocalPartitions set to local, and topic
// "loc" of 6 partitions; it returns the index of each partition's owner.
func localCluster(t *testing.T, local bool) (*cluster, map[uint32]int) {
	c := newClusterConfigured(t, 3, 3, false, func(cfg *node.Config) { cfg.ProduceLocalPartitions = local })
	c.advance(5_000_000_000)
	if r := c.do(c.leader(), func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "loc", Partitions: u32(6)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.advance(1_000_000_000)
	ownerOf := map[uint32]int{}
	for i := range c.nodes {
		r := c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "loc") })
		for _, ps := range r.Stats {
			if ps.OwnerNode == fmt.Sprintf("n%d", i+1) { // a node names itself
				ownerOf[ps.Index] = i
			}
		}
	}
	if len(ownerOf) != 6 {
		t.Fatalf("owners of 6 partitions: %v", ownerOf)
	}
	return c, ownerOf
}

// producedWhere produces 12 messages with neither key nor partition on each node, one
// request each, and answers, per partition, the nodes its messages were produced on.
func producedWhere(t *testing.T, c *cluster, ownerOf map[uint32]int) map[uint32][]int {
	for i := range c.nodes {
		for k := range 12 {
			body := fmt.Sprintf("%d %d", i, k)
			if r := c.do(i, func(nd *node.Node, now int64, tok uint64) {
				nd.Produce(now, tok, "loc", []node.ProduceMessage{{Partition: -1, Payload: []byte(body)}})
			}); r.Err != nil || r.Accepted != 1 {
				t.Fatalf("produce on node %d: %+v", i+1, r)
			}
		}
	}
	c.advance(1_000_000_000)
	from := map[uint32][]int{}
	n := 0
	for p, owner := range ownerOf {
		r := c.do(owner, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Topic: "loc", Partition: int64(p), Max: 100})
		})
		for _, m := range r.Messages {
			var i, k int
			if _, err := fmt.Sscanf(string(m.Payload), "%d %d", &i, &k); err != nil {
				t.Fatalf("payload %q: %v", m.Payload, err)
			}
			from[p] = append(from[p], i)
			n++
		}
	}
	if n != 36 {
		t.Fatalf("consumed %d of 36 messages: %v", n, from)
	}
	return from
}

// With ProduceLocalPartitions, a message with neither key nor partition goes to a
// partition its node owns, and round-robin over them: each of the 6 partitions holds
// the 6 messages of its owner's 12.
func TestProduceLocalPartitionsStayOnTheirNode(t *testing.T) {
	c, ownerOf := localCluster(t, true)
	for p, nodes := range producedWhere(t, c, ownerOf) {
		if len(nodes) != 6 {
			t.Fatalf("partition %d holds %d messages, want 6 (round-robin over its owner's two)", p, len(nodes))
		}
		for _, i := range nodes {
			if i != ownerOf[p] {
				t.Fatalf("partition %d, owned by node %d, holds a message produced on node %d", p, ownerOf[p]+1, i+1)
			}
		}
	}
}

// Without it, the rotation covers every partition: messages produced on one node reach
// partitions the others own (what the test above tells apart).
func TestProduceRoundRobinCoversEveryPartition(t *testing.T) {
	c, ownerOf := localCluster(t, false)
	crossed := 0
	for p, nodes := range producedWhere(t, c, ownerOf) {
		for _, i := range nodes {
			if i != ownerOf[p] {
				crossed++
			}
		}
	}
	if crossed == 0 {
		t.Fatalf("no message went to a partition another node owns")
	}
}
