package node_test

import (
	"fmt"
	"testing"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// A node whose metastore replica still holds an earlier incarnation of a topic (it missed
// the delete and the create again) asks the owners for their partitions' stats by the
// topic's name; the owners answer those of the incarnation they hold. GetTopic there
// names the earlier incarnation, so it must not show the later one's stats under it: it
// shows zeros for them, as for an owner that does not answer (cluster seed 582: a high
// watermark of 3 read for an incarnation whose partition had been read at offset 33).
func TestStaleReplicaShowsNoStatsOfAnotherIncarnation(t *testing.T) {
	c, ownerOf, stale, old := staleReplica(t)
	l := c.leader()
	renewed := recreateOnSameOwners(t, c, l, ownerOf)
	if renewed.Topic.ID == old {
		t.Fatalf("the topic was created again as incarnation %d, the one deleted", old)
	}
	for p := range int64(3) { // three records in each partition the stale node does not own
		if ownerOf[p] == stale {
			continue
		}
		for k := range 3 {
			body := fmt.Sprintf("new%d-%d", p, k)
			if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
				nd.Produce(now, tok, "r", []node.ProduceMessage{{Partition: p, Payload: []byte(body)}})
			}); r.Err != nil {
				t.Fatalf("produce: %v", r.Err)
			}
		}
	}
	c.advance(200_000_000) // less than an election timeout: the stale node still follows
	r := c.do(stale, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") })
	if r.Err != nil || r.Topic.ID != old {
		t.Fatalf("stale node answered %+v, want incarnation %d (its replica missed the delete)", r, old)
	}
	for _, ps := range r.Stats {
		if ownerOf[int64(ps.Index)] != stale && ps.HighWatermark != 0 {
			t.Fatalf("stale node shows partition %d of incarnation %d with high watermark %d: the stats of incarnation %d", ps.Index, old, ps.HighWatermark, renewed.Topic.ID)
		}
	}
	for _, ps := range c.do(l, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") }).Stats {
		if ownerOf[int64(ps.Index)] != stale && ps.HighWatermark != 3 {
			t.Fatalf("leader shows partition %d of incarnation %d with high watermark %d, want 3", ps.Index, renewed.Topic.ID, ps.HighWatermark)
		}
	}
}

// staleReplica is routedCluster with one follower, stale, whose metastore replica hears
// nothing more of the log (its raft messages are dropped); old is the incarnation of "r"
// it holds.
func staleReplica(t *testing.T) (c *cluster, ownerOf map[int64]int, stale int, old uint64) {
	t.Helper()
	c, ownerOf = routedCluster(t)
	stale = (c.leader() + 1) % 3
	old = c.do(stale, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") }).Topic.ID
	c.drop = func(from, to uint64, body []byte) bool {
		return (from == uint64(stale+1) || to == uint64(stale+1)) && wire.Kind(body[1]) == wire.KindRaft
	}
	return c, ownerOf, stale, old
}

// recreateOnSameOwners deletes topic "r" and creates it again on node l until the new
// incarnation's partitions have the owners of ownerOf (owners rotate with the metastore's
// log index), and answers GetTopic on l.
func recreateOnSameOwners(t *testing.T, c *cluster, l int, ownerOf map[int64]int) node.Response {
	const triesMax = 6
	for range triesMax {
		for _, f := range []func(nd *node.Node, now int64, tok uint64){
			func(nd *node.Node, now int64, tok uint64) { nd.DeleteTopic(now, tok, "r") },
			func(nd *node.Node, now int64, tok uint64) {
				nd.CreateTopic(now, tok, node.TopicSpec{Name: "r", Partitions: u32(3), VisibilityTimeoutMs: i64(60_000)})
			},
		} {
			if r := c.do(l, f); r.Err != nil {
				t.Fatalf("delete or create: %v", r.Err)
			}
		}
		r := c.do(l, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "r") })
		same := true
		for _, ps := range r.Stats {
			want := fmt.Sprint(ownerOf[int64(ps.Index)] + 1)
			if ownerOf[int64(ps.Index)] == l {
				want = fmt.Sprintf("n%d", l+1)
			}
			same = same && ps.OwnerNode == want
		}
		if same {
			return r
		}
	}
	t.Fatalf("topic r never created again on its earlier owners in %d tries", triesMax)
	return node.Response{}
}

// The same stale node, asked to consume, must not deliver the owners' records of the
// later incarnation: their acks there would resolve the name to its earlier incarnation
// and answer 410 while their leases live (cluster seed 108502). It answers without them
// and releases them at their owners, where they stay deliverable.
func TestStaleReplicaDeliversNoRecordsOfAnotherIncarnation(t *testing.T) {
	c, ownerOf, stale, old := staleReplica(t)
	l := c.leader()
	recreateOnSameOwners(t, c, l, ownerOf)
	var remote int64 = -1
	for p := range int64(3) {
		if ownerOf[p] != stale {
			remote = p
		}
	}
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.Produce(now, tok, "r", []node.ProduceMessage{{Partition: remote, Payload: []byte("later")}})
	}); r.Err != nil {
		t.Fatalf("produce: %v", r.Err)
	}
	c.advance(200_000_000)                     // less than an election timeout: the stale node still follows
	for _, part := range []int64{remote, -1} { // pinned, then any partition
		r := c.do(stale, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Topic: "r", Partition: part, Max: 10})
		})
		for _, m := range r.Messages {
			if m.TopicID != old {
				t.Fatalf("the stale node (incarnation %d) delivered %q of incarnation %d", old, m.Payload, m.TopicID)
			}
		}
	}
	got := consumeOn(c, ownerOf[remote], remote)
	if got.Err != nil || len(got.Messages) != 1 || string(got.Messages[0].Payload) != "later" {
		t.Fatalf("the owner's record after the stale node's consumes: %+v", got)
	}
}
