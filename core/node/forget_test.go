package node_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
)

// A dead member is forgotten: the dry run names its partitions and their new owners and
// changes nothing; a live member is refused; the forget gives its partition to a live
// member, which takes produces at once, removes it from the raft configuration and
// promotes the learner in its place; when the forgotten node comes back it is told, and
// stops without serving anything.
func TestForgetDeadMember(t *testing.T) {
	c, l := clusterWithTopicF(t)
	dead := 2 // member 3, a voter
	if l == dead {
		dead = (l + 1) % 3
	}
	via := (dead + 1) % 3
	id := uint64(dead + 1)
	forget := func(member uint64, dry bool) node.Response {
		return c.do(via, func(nd *node.Node, now int64, tok uint64) { nd.ForgetMember(now, tok, member, dry) })
	}
	if r := forget(4, false); !errors.Is(r.Err, node.ErrRefused) || !strings.Contains(r.Err.Error(), "alive") {
		t.Fatalf("forget a live member: %v", r.Err)
	}
	if r := forget(9, true); !errors.Is(r.Err, node.ErrMemberNotFound) {
		t.Fatalf("forget an unknown member: %v", r.Err)
	}
	tid := topicIDOf(t, c, "f")
	produceToOwned(t, c, via, "f", tid, id, 5)
	c.cut[id] = true
	c.advance(8_000_000_000)
	dry := forget(id, true)
	if dry.Err != nil || dry.Forget == nil || len(dry.Forget.Partitions) != 1 || !dry.Forget.DryRun {
		t.Fatalf("dry run: %v %+v", dry.Err, dry.Forget)
	}
	part := dry.Forget.Partitions[0]
	if !part.Marked || part.Lost() != 5 || part.Oldest != 0 {
		t.Fatalf("dry run: the member's last mark %+v, want 5 records from offset 0", part)
	}
	if owner, _ := c.nodes[via].PartitionOwner(tid, part.Partition); owner != id {
		t.Fatalf("the dry run changed the owner to %d", owner)
	}
	r := forget(id, false)
	if r.Err != nil || r.Forget == nil || len(r.Forget.Partitions) != 1 || r.Forget.Partitions[0].To == id ||
		r.Forget.Partitions[0].Lost() != 5 {
		t.Fatalf("forget: %v %+v", r.Err, r.Forget)
	}
	c.advance(3_000_000_000)
	for i := range c.nodes {
		if i == dead {
			continue
		}
		if owner, _ := c.nodes[i].PartitionOwner(tid, part.Partition); owner != r.Forget.Partitions[0].To {
			t.Fatalf("node %d: partition %d owned by %d", i+1, part.Partition, owner)
		}
		if v := c.nodes[i].Voters(); slices.Contains(v, id) || len(v) != 3 {
			t.Fatalf("node %d: voters %v, want three without %d", i+1, v, id)
		}
	}
	p := int64(part.Partition)
	if r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
		nd.Produce(now, tok, "f", []node.ProduceMessage{{Partition: p, Payload: []byte("after")}})
	}); r.Err != nil {
		t.Fatalf("produce to the reassigned partition: %v", r.Err)
	}
	c.advance(1_000_000_000)
	got := c.do(via, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "f", Partition: p, Max: 10})
	})
	if got.Err != nil || len(got.Messages) != 1 || string(got.Messages[0].Payload) != "after" {
		t.Fatalf("consume the reassigned partition: %v %+v", got.Err, got.Messages)
	}
	if off := got.Messages[0].Offset; off != meta.EpochBase(1) || r.Forget.Partitions[0].FirstOffset != off {
		t.Fatalf("the first record of epoch 1 at offset %d, want %d (report %d)", off, meta.EpochBase(1),
			r.Forget.Partitions[0].FirstOffset)
	}

	c.mayFail[dead] = true
	c.cut[id] = false
	c.advance(3_000_000_000)
	if err := c.failed[dead]; !errors.Is(err, meta.ErrForgotten) || !strings.Contains(err.Error(), "new id") {
		t.Fatalf("the forgotten node came back and ended with %v", err)
	}
	if err := c.nodes[dead].IsReady(); err == nil {
		t.Fatalf("the forgotten node is ready")
	}
}

// clusterWithTopicF forms four members (three voters) and creates topic "f" of four
// partitions; it answers the cluster and its leader.
func clusterWithTopicF(t *testing.T) (*cluster, int) {
	t.Helper()
	c := newClusterOf(t, 4, 3)
	c.advance(8_000_000_000)
	l := c.leader()
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "f", Partitions: u32(4)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.advance(1_000_000_000)
	return c, l
}

// produceToOwned produces n records, through node via, to the partition of topic (tid)
// that member owns, and waits for them to be committed there.
func produceToOwned(t *testing.T, c *cluster, via int, topic string, tid, member uint64, n int) {
	t.Helper()
	for p := range uint32(4) {
		if owner, _ := c.nodes[via].PartitionOwner(tid, p); owner != member {
			continue
		}
		for range n {
			if r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
				nd.Produce(now, tok, topic, []node.ProduceMessage{{Partition: int64(p), Payload: []byte("before")}})
			}); r.Err != nil {
				t.Fatalf("produce: %v", r.Err)
			}
		}
		c.advance(3_000_000_000) // committed at the owner, and heard of in its heartbeats
		return
	}
	t.Fatalf("member %d owns no partition of %s", member, topic)
}

// A dead leader is forgotten through a follower, which answers the records it gives up
// from the table the leader passed on before it died (its own marks are in no
// heartbeat to anyone).
func TestForgetDeadLeaderReportsItsMarks(t *testing.T) {
	c, l := clusterWithTopicF(t)
	id := uint64(l + 1)
	produceToOwned(t, c, l, "f", topicIDOf(t, c, "f"), id, 7)
	c.cut[id] = true
	c.advance(12_000_000_000)
	via := c.awaitLeader(10_000_000_000)
	if via == l {
		t.Fatalf("no new leader")
	}
	via = (via + 1) % 4 // a follower of the new leader, or the new leader's neighbour
	if via == l {
		via = (via + 1) % 4
	}
	r := c.do(via, func(nd *node.Node, now int64, tok uint64) { nd.ForgetMember(now, tok, id, true) })
	if r.Err != nil || r.Forget == nil || len(r.Forget.Partitions) != 1 {
		t.Fatalf("dry run: %v %+v", r.Err, r.Forget)
	}
	if p := r.Forget.Partitions[0]; !p.Marked || p.Lost() != 7 || p.HighWatermark != 7 {
		t.Fatalf("dry run: the dead leader's last mark %+v, want 7 records", p)
	}
}

// The voters guard: with two of four members dead, forgetting one would leave two voters
// and no live learner while three members remain; the answer names the guard.
func TestForgetRefusedByTheVotersGuard(t *testing.T) {
	c := newClusterOf(t, 4, 3)
	c.advance(8_000_000_000)
	l := c.leader()
	dead := (l + 1) % 3 // a voter
	c.cut[uint64(dead+1)], c.cut[4] = true, true
	c.advance(8_000_000_000)
	r := c.do(l, func(nd *node.Node, now int64, tok uint64) { nd.ForgetMember(now, tok, uint64(dead+1), false) })
	if !errors.Is(r.Err, node.ErrRefused) || !strings.Contains(r.Err.Error(), "voters") {
		t.Fatalf("forget: %v", r.Err)
	}
}

// Forgetting one of five voters leaves four members: the leader keeps three voters
// (VotersTarget) and makes the fourth a learner, in the change that removes the
// forgotten one.
func TestForgetOneOfFiveLeavesThreeVoters(t *testing.T) {
	c := newCluster(t, 5)
	c.advance(8_000_000_000)
	l := c.leader()
	dead := (l + 1) % 5
	c.cut[uint64(dead+1)] = true
	c.advance(8_000_000_000)
	l = c.awaitLeader(10_000_000_000)
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.ForgetMember(now, tok, uint64(dead+1), false)
	}); r.Err != nil {
		t.Fatalf("forget: %v", r.Err)
	}
	c.advance(3_000_000_000)
	r := c.do(l, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
	voters := 0
	for _, m := range r.Members {
		if m.Voter {
			voters++
		}
	}
	if len(r.Members) != 4 || voters != 3 {
		t.Fatalf("members after the forget: %+v, want four with three voters", r.Members)
	}
}

// A node whose messages are lost but that still hears the others (a one-way cut) is
// marked dead while it runs; once forgotten, its own replica applies the forget and it
// stops, though no member ever hears its heartbeat to tell it.
func TestForgottenNodeBehindAOneWayCutStops(t *testing.T) {
	c := newCluster(t, 3)
	c.advance(8_000_000_000)
	l := c.leader()
	f := (l + 1) % 3
	c.drop = func(from, _ uint64, _ []byte) bool { return from == uint64(f+1) }
	c.mayFail[f] = true
	c.advance(8_000_000_000)
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.ForgetMember(now, tok, uint64(f+1), false)
	}); r.Err != nil {
		t.Fatalf("forget: %v", r.Err)
	}
	c.advance(3_000_000_000)
	if err := c.failed[f]; !errors.Is(err, meta.ErrForgotten) || !strings.Contains(err.Error(), "own replica") {
		t.Fatalf("the forgotten node behind a one-way cut ended with %v", err)
	}
}
