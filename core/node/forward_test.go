package node_test

import (
	"errors"
	"testing"

	"github.com/narad/narad/core/node"
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
