package node_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// routedCluster is 3 nodes with topic "r" of 3 partitions, one owned by each node, and
// the index of a node and of the partition each node owns.
func routedCluster(t *testing.T) (c *cluster, ownerOf map[int64]int) {
	c = newCluster(t, 3)
	c.advance(5_000_000_000)
	l := c.leader()
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "r", Partitions: u32(3), VisibilityTimeoutMs: i64(60_000)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.advance(1_000_000_000)
	ownerOf = map[int64]int{}
	for p := int64(0); p < 3; p++ { // produce one message per partition, then find its owner
		body := fmt.Sprintf("p%d", p)
		if r := c.do(0, func(nd *node.Node, now int64, tok uint64) {
			nd.Produce(now, tok, "r", []node.ProduceMessage{{Partition: p, Payload: []byte(body)}})
		}); r.Err != nil {
			t.Fatalf("produce: %v", r.Err)
		}
	}
	c.advance(1_000_000_000)
	for i := range c.nodes {
		r := c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") })
		for _, ps := range r.Stats {
			if ps.OwnerNode == fmt.Sprintf("n%d", i+1) { // a node names itself
				ownerOf[int64(ps.Index)] = i
			}
		}
	}
	return c, ownerOf
}

func consumeOn(c *cluster, i int, part int64) node.Response {
	return c.do(i, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "r", Partition: part, Max: 10})
	})
}

// A consume on any node reaches every owner: records of other nodes' partitions come
// back through it, acks through it settle them on their owners, and records an owner
// leased for an answer already given are released at once, not after the visibility
// timeout.
func TestConsumeAndAckRoutedToOwners(t *testing.T) {
	c, _ := routedCluster(t)
	var got []string
	var handles []string
	var topicID uint64 // each message names the incarnation it was read from, routed or not
	for range 3 {      // this node's partition first, then one remote owner per consume
		r := consumeOn(c, 0, -1)
		if r.Err != nil || len(r.Messages) != 1 {
			t.Fatalf("consume on node 1: %+v", r)
		}
		got = append(got, string(r.Messages[0].Payload))
		handles = append(handles, r.Messages[0].ReceiptHandle)
		if id := r.Messages[0].TopicID; id == 0 || (topicID != 0 && id != topicID) {
			t.Fatalf("message from incarnation %d, the others from %d: every one names the topic's", id, topicID)
		}
		topicID = r.Messages[0].TopicID
	}
	slices.Sort(got)
	if fmt.Sprint(got) != "[p0 p1 p2]" {
		t.Fatalf("consumed %v through node 1, want every partition's message", got)
	}
	if r := consumeOn(c, 0, -1); r.Err != nil || len(r.Messages) != 0 {
		t.Fatalf("everything is leased: %+v", r)
	}
	r := c.do(0, func(nd *node.Node, now int64, tok uint64) {
		nd.Ack(now, tok, "r", append(handles, "bad"), node.AckSettle)
	})
	if r.Err != nil || len(r.Results) != 4 || r.Results[0] != nil || r.Results[1] != nil || r.Results[2] != nil ||
		!errors.Is(r.Results[3], node.ErrBadHandle) {
		t.Fatalf("routed acks: %+v", r)
	}
	c.advance(61_000_000_000) // past the visibility timeout: nothing acked comes back
	for i := range c.nodes {
		if r := consumeOn(c, i, -1); r.Err != nil || len(r.Messages) != 0 {
			t.Fatalf("acked messages delivered again on node %d: %+v", i+1, r)
		}
	}
}

// A consume pinned to another node's partition is served by its owner; the loser of a
// spread consume has its records released for the next consume at once.
func TestPinnedConsumeRoutedAndLosersReleased(t *testing.T) {
	c, ownerOf := routedCluster(t)
	me := ownerOf[0]
	other := (me + 1) % 3
	var otherPart int64
	for p, o := range ownerOf {
		if o == other {
			otherPart = p
		}
	}
	r := consumeOn(c, me, otherPart)
	if r.Err != nil || len(r.Messages) != 1 || r.Messages[0].Partition != uint32(otherPart) {
		t.Fatalf("pinned consume of partition %d (node %d) on node %d: %+v", otherPart, other+1, me+1, r)
	}
	// Node me's own partition: leased by a consume there; the next spread consume asks
	// both others, one of which has records left.
	if r := consumeOn(c, me, 0); r.Err != nil || len(r.Messages) != 1 {
		t.Fatalf("own partition: %+v", r)
	}
	r = consumeOn(c, me, -1)
	if r.Err != nil || len(r.Messages) != 1 {
		t.Fatalf("spread consume with one record left on a third node: %+v", r)
	}
	if r := consumeOn(c, me, -1); r.Err != nil || len(r.Messages) != 0 {
		t.Fatalf("nothing left: %+v", r)
	}
}

// GET on a topic shows every partition's stats, fetched from its owner, on any node.
func TestTopicStatsFromOwners(t *testing.T) {
	c, ownerOf := routedCluster(t)
	for i := range c.nodes {
		r := c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") })
		if r.Err != nil || len(r.Stats) != 3 {
			t.Fatalf("stats on node %d: %+v", i+1, r)
		}
		for _, ps := range r.Stats {
			owner := fmt.Sprint(ownerOf[int64(ps.Index)] + 1)
			if ownerOf[int64(ps.Index)] == i {
				owner = fmt.Sprintf("n%d", i+1)
			}
			if ps.HighWatermark != 1 || ps.SizeBytes == 0 || ps.OwnerNode != owner {
				t.Fatalf("node %d shows partition %d as %+v: want high watermark 1, its bytes, owner %s", i+1, ps.Index, ps, owner)
			}
		}
	}
}

// A request the network delivers twice is served once: a commit copy would store its
// records twice, a consume copy would lease records nobody receives.
func TestDuplicateCommitRequestCommittedOnce(t *testing.T) {
	c, ownerOf := routedCluster(t)
	owner := ownerOf[1]
	from := uint64((owner+1)%3 + 1)
	hw := func() uint64 {
		r := c.do(owner, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") })
		return r.Stats[1].HighWatermark
	}
	id := c.do(owner, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") }).Topic.ID
	before := hw()
	body, err := wire.Encode(nil, wire.CommitRequest{ID: 77, Topic: "r", Incarnation: id, Partition: 1,
		Records: []wire.Record{{Payload: []byte("once")}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c.nodes[owner].Receive(c.now, from, body)
		c.settle()
	}
	c.advance(100_000_000)
	if got := hw(); got != before+1 {
		t.Fatalf("high watermark %d after one commit delivered twice, want %d", got, before+1)
	}
}
