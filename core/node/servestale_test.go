package node_test

import (
	"testing"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// A node moves a partition away and still holds its copy (the release waits for the new
// owner to serve it, and no probe gets through); the new owner takes records past the
// copied ones and dies; a forget gives the partition back to the first node under a new
// epoch. That node removes its old copy and serves the partition empty from the epoch's
// base: continuing the old copy would put other records at offsets the forgotten owner
// delivered (cluster seed 740; narad_mut_servestale).
func TestForgetGivesBackAPartitionMovedAwayAndItsOldCopyIsDropped(t *testing.T) {
	c, l := clusterWithTopicF(t)
	tid := topicIDOf(t, c, "f")
	src, dst, part := pickMoveAndForget(t, c, l, tid)
	via := l
	produceToOwned(t, c, via, "f", tid, uint64(src+1), 5)
	c.drop = func(from, to uint64, body []byte) bool { // the source's release probes
		m, err := wire.Decode(body)
		_, fetch := m.(wire.FetchRequest)
		return err == nil && fetch && from == uint64(src+1) && to == uint64(dst+1)
	}
	if r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
		nd.MovePartition(now, tok, "f", part, uint64(dst+1))
	}); r.Err != nil {
		t.Fatalf("move: %v", r.Err)
	}
	c.advance(5_000_000_000)
	if owner, _ := c.nodes[via].PartitionOwner(tid, part); owner != uint64(dst+1) ||
		c.nodes[src].MoveStats().Released != 0 {
		t.Fatalf("setup: owner %d after the move, source released %d", owner,
			c.nodes[src].MoveStats().Released)
	}
	for range 3 { // offsets 5-7 at the new owner
		if r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
			nd.Produce(now, tok, "f", []node.ProduceMessage{{Partition: int64(part), Payload: []byte("moved")}})
		}); r.Err != nil {
			t.Fatalf("produce after the move: %v", r.Err)
		}
	}
	c.advance(3_000_000_000)
	c.cut[uint64(dst+1)] = true
	c.mayFail[dst] = true
	c.advance(8_000_000_000)
	r := c.do(via, func(nd *node.Node, now int64, tok uint64) { nd.ForgetMember(now, tok, uint64(dst+1), false) })
	if r.Err != nil || r.Forget == nil || !gaveTo(r.Forget.Partitions, part, uint64(src+1)) {
		t.Fatalf("forget: %v %+v", r.Err, r.Forget)
	}
	c.advance(3_000_000_000)
	epoch := c.nodes[src].PartitionEpoch(tid, part)
	if r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
		nd.Produce(now, tok, "f", []node.ProduceMessage{{Partition: int64(part), Payload: []byte("back")}})
	}); r.Err != nil {
		t.Fatalf("produce after the forget: %v", r.Err)
	}
	c.advance(1_000_000_000)
	got := c.do(src, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "f", Partition: int64(part), Max: 100})
	})
	if got.Err != nil || len(got.Messages) != 1 || string(got.Messages[0].Payload) != "back" ||
		got.Messages[0].Offset != meta.EpochBase(epoch) {
		t.Fatalf("epoch %d: consumed %v %+v, want only \"back\" at offset %d", epoch, got.Err,
			got.Messages, meta.EpochBase(epoch))
	}
}

// pickMoveAndForget chooses a partition of "f" owned by a member other than the leader l
// (src), and a destination that is neither (dst). That the forget of dst gives the
// partition back to src is the placement's choice: the test checks it in the forget's
// answer.
func pickMoveAndForget(t *testing.T, c *cluster, l int, tid uint64) (src, dst int, part uint32) {
	t.Helper()
	for p := range uint32(4) {
		owner, _ := c.nodes[l].PartitionOwner(tid, p)
		if int(owner-1) == l {
			continue
		}
		for d := range c.nodes {
			if d != l && uint64(d+1) != owner {
				return int(owner - 1), d, p
			}
		}
	}
	t.Fatal("setup: no partition owned by a member other than the leader")
	return 0, 0, 0
}

// gaveTo reports whether the forget gave partition part to member to.
func gaveTo(ps []node.ForgetPartition, part uint32, to uint64) bool {
	for _, p := range ps {
		if p.Partition == part {
			return p.To == to
		}
	}
	return false
}
