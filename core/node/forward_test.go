package node_test

import (
	"errors"
	"testing"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// A topic write on a follower is forwarded to the metastore leader and answered once the
// follower's own replica applied it; the leader's refusals come back as the same errors
// the leader would give; a leader that never answers makes it ErrNotReady.
func TestTopicWritesForwardedFromFollowers(t *testing.T) {
	c := newCluster(t, 3)
	c.advance(5_000_000_000)
	l := c.leader()
	if l < 0 {
		t.Fatalf("no leader after 5 s")
	}
	f1, f2 := (l+1)%3, (l+2)%3
	create := func(i int, name string, parts uint32) node.Response {
		return c.do(i, func(nd *node.Node, now int64, tok uint64) {
			nd.CreateTopic(now, tok, node.TopicSpec{Name: name, Partitions: u32(parts)})
		})
	}
	getOn := func(i int, name string) node.Response {
		return c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, name) })
	}
	r := create(f1, "fw", 2)
	if r.Err != nil || r.Topic.Name != "fw" || r.Topic.Partitions != 2 {
		t.Fatalf("create on follower %d: %+v", f1+1, r)
	}
	if g := getOn(f1, "fw"); g.Err != nil || g.Topic.ID != r.Topic.ID {
		t.Fatalf("the follower's replica must have the topic when the create is answered: %+v", g)
	}
	if r := create(f2, "fw", 2); !errors.Is(r.Err, node.ErrTopicExists) {
		t.Fatalf("second create on follower %d: %v, want exists", f2+1, r.Err)
	}
	if r := create(f2, "bad", 0); !errors.Is(r.Err, node.ErrInvalid) {
		t.Fatalf("invalid create on follower %d: %v, want invalid", f2+1, r.Err)
	}
	r = c.do(f2, func(nd *node.Node, now int64, tok uint64) {
		nd.PatchTopic(now, tok, "fw", node.TopicPatch{Partitions: u32(4)})
	})
	if r.Err != nil || r.Topic.Partitions != 4 {
		t.Fatalf("patch on follower %d: %+v", f2+1, r)
	}
	del := func(i int) error {
		return c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.DeleteTopic(now, tok, "fw") }).Err
	}
	if err := del(f1); err != nil {
		t.Fatalf("delete on follower %d: %v", f1+1, err)
	}
	if g := getOn(f1, "fw"); !errors.Is(g.Err, node.ErrTopicNotFound) {
		t.Fatalf("deleted topic still on follower %d: %+v", f1+1, g)
	}
	if err := del(f2); !errors.Is(err, node.ErrTopicNotFound) {
		t.Fatalf("second delete on follower %d: %v, want not found", f2+1, err)
	}

	// The leader falls silent: the forward is never answered.
	c.cut[uint64(l+1)] = true
	c.tok++
	tok := c.tok
	c.nodes[f1].CreateTopic(c.now, tok, node.TopicSpec{Name: "late", Partitions: u32(1)})
	c.advance(node.ForwardTimeoutNs + 1_000_000_000)
	if r, ok := c.resps[tok]; !ok || !errors.Is(r.Err, node.ErrNotReady) {
		t.Fatalf("a forward the leader never answers: %+v (answered %v), want not ready", r, ok)
	}
}

// A copy of a forwarded write that the network delivers late, after the topic it created
// was deleted, to the metastore leader of a later term on another node (and to the old
// leader, a follower now, and to the new leader again) is refused: no replica makes the
// topic again, and the copy's answer, to a call answered long ago, changes nothing on the
// follower (cluster seeds 147662 and 11239 of narad-sim: a copy of a forwarded cancel,
// applied again, ended the drain asked for after it).
func TestLateCopyOfAForwardIsNotAppliedAgain(t *testing.T) {
	c := newCluster(t, 3)
	l := c.awaitLeader(10_000_000_000)
	c.advance(1_000_000_000)
	f := (l + 1) % 3
	var copies []envelope
	c.drop = func(from, to uint64, body []byte) bool {
		if m, err := wire.Decode(body); err == nil {
			if _, ok := m.(wire.ProposeRequest); ok {
				copies = append(copies, envelope{from: from, out: node.Outbound{To: to, Body: body}})
			}
		}
		return false
	}
	if r := c.do(f, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "t", Partitions: u32(1)})
	}); r.Err != nil {
		t.Fatalf("forwarded create: %v", r.Err)
	}
	c.drop = nil
	if len(copies) != 1 {
		t.Fatalf("setup: %d forwards captured, want 1", len(copies))
	}
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) { nd.DeleteTopic(now, tok, "t") }); r.Err != nil {
		t.Fatalf("delete: %v", r.Err)
	}
	c.cut[uint64(l+1)] = true // until another node leads
	next := -1
	for waited := int64(0); next < 0; waited += 100_000_000 {
		if waited > 20_000_000_000 {
			t.Fatal("no other leader 20 s after cutting the leader off")
		}
		c.advance(100_000_000)
		for i, nd := range c.nodes {
			if lead, _ := nd.MetastoreLeader(); i != l && lead == uint64(i+1) {
				next = i
			}
		}
	}
	delete(c.cut, uint64(l+1))
	c.advance(2_000_000_000)
	for _, to := range []int{next, l, next} {
		c.nodes[to].Receive(c.now, copies[0].from, copies[0].out.Body)
		c.advance(1_000_000_000)
	}
	for i := range c.nodes {
		r := c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, "t") })
		if !errors.Is(r.Err, node.ErrTopicNotFound) {
			t.Fatalf("node %d: the late copy of the forwarded create made the topic again: %+v", i+1, r)
		}
	}
	d := c.nodes[0].MetastoreDigest()
	for i, nd := range c.nodes {
		if nd.MetastoreApplied() != c.nodes[0].MetastoreApplied() || nd.MetastoreDigest() != d {
			t.Fatalf("node %d: replicas differ after the copy (applied %d, node 1 %d)", i+1,
				nd.MetastoreApplied(), c.nodes[0].MetastoreApplied())
		}
	}
}
