package node_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
)

// rootHashOf is a stand-in bcrypt hash (the core checks its form, never a password).
func rootHashOf(c byte) string { return "$2a$10$" + strings.Repeat(string(c), meta.HashBytes-7) }

func producer(patterns ...string) []access.Grant {
	return []access.Grant{{Action: access.Produce, Patterns: patterns}}
}

// A single node given a root hash makes the root user once its metastore leads; users
// are then made, changed and deleted through it, each refusal with its API error.
func TestSingleNodeMakesRootAndManagesUsers(t *testing.T) {
	h := newHarnessWith(t, nil, node.Config{NodeID: "n1", Dispatch: dispatch.Config{LingerNs: -1}, RootHash: rootHashOf('r')})
	h.advance(100_000_000)
	us := h.n.Users()
	if len(us) != 1 || us[0].Name != "admin" || !us[0].Root || us[0].Hash != rootHashOf('r') {
		t.Fatalf("users after the first start: %+v", us)
	}
	r := h.do(func(now int64, tok uint64) {
		h.n.CreateUser(now, tok, "admin", "app", rootHashOf('a'), producer("orders"))
	})
	if r.Err != nil || r.User.Name != "app" || r.User.Root || len(r.User.Grants) != 1 {
		t.Fatalf("create: %+v", r)
	}
	refusals := []struct {
		name string
		f    func(now int64, tok uint64)
		want error
	}{
		{"exists", func(now int64, tok uint64) { h.n.CreateUser(now, tok, "admin", "app", rootHashOf('a'), nil) }, node.ErrUserExists},
		{"not admin", func(now int64, tok uint64) { h.n.CreateUser(now, tok, "app", "x", rootHashOf('a'), nil) }, node.ErrForbidden},
		{"root", func(now int64, tok uint64) { h.n.DeleteUser(now, tok, "admin", "admin") }, node.ErrForbidden},
		{"unknown", func(now int64, tok uint64) { h.n.DeleteUser(now, tok, "admin", "nobody") }, node.ErrUserNotFound},
		{"bad grant", func(now int64, tok uint64) {
			h.n.SetUserGrants(now, tok, "admin", "app", []access.Grant{{Action: "read"}})
		}, node.ErrInvalid},
	}
	for _, c := range refusals {
		if r := h.do(c.f); !errors.Is(r.Err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, r.Err, c.want)
		}
	}
	if r := h.do(func(now int64, tok uint64) { h.n.SetUserPassword(now, tok, "app", "app", rootHashOf('b')) }); r.Err != nil {
		t.Fatalf("own password: %v", r.Err)
	}
	if r := h.do(func(now int64, tok uint64) { h.n.DeleteUser(now, tok, "admin", "app") }); r.Err != nil || len(h.n.Users()) != 1 {
		t.Fatalf("delete: %v, users %+v", r.Err, h.n.Users())
	}
	// A restart keeps the root user and makes no second one.
	h.crash()
	h.start()
	h.advance(2 * node.RootRetryNs)
	if us := h.n.Users(); len(us) != 1 || us[0].Hash != rootHashOf('r') {
		t.Fatalf("users after a restart: %+v", us)
	}
}

// In a cluster one root user applies, whichever nodes proposed theirs; a user made and
// changed through a follower (forwarded to the leader) reaches every replica, and a
// refusal comes back through the forward with its error.
func TestClusterUsersAreReplicated(t *testing.T) {
	c := newClusterWith(t, 3, 3, true)
	c.advance(5_000_000_000)
	l := c.leader()
	f := (l + 1) % 3
	roots := map[string]bool{}
	for i, nd := range c.nodes {
		us := nd.Users()
		if len(us) != 1 || !us[0].Root {
			t.Fatalf("node %d users %+v", i+1, us)
		}
		roots[us[0].Hash] = true
	}
	if len(roots) != 1 {
		t.Fatalf("the replicas hold different root users: %v", roots)
	}
	r := c.do(f, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateUser(now, tok, "admin", "app", rootHashOf('a'), producer("o*"))
	})
	if r.Err != nil || r.User.Name != "app" {
		t.Fatalf("create through a follower: %+v", r)
	}
	if r := c.do(f, func(nd *node.Node, now int64, tok uint64) { nd.DeleteUser(now, tok, "app", "admin") }); !errors.Is(r.Err, node.ErrForbidden) {
		t.Fatalf("a forwarded forbidden delete: %v", r.Err)
	}
	if r := c.do(f, func(nd *node.Node, now int64, tok uint64) {
		nd.SetUserPassword(now, tok, "app", "app", rootHashOf('b'))
	}); r.Err != nil {
		t.Fatalf("password through a follower: %v", r.Err)
	}
	c.settle()
	for i, nd := range c.nodes {
		us := nd.Users()
		if len(us) != 2 || us[1].Name != "app" || us[1].Hash != rootHashOf('b') {
			t.Fatalf("node %d users %+v", i+1, us)
		}
	}
}

// A consume routed to another node's partition carries its user, and the owner checks
// the user's consume grant from its own replica: one without it is refused there.
func TestRoutedConsumeCheckedByTheOwner(t *testing.T) {
	c := newClusterWith(t, 3, 3, true)
	c.advance(5_000_000_000)
	l := c.leader()
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "r", Partitions: u32(3)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateUser(now, tok, "admin", "reader", rootHashOf('c'), []access.Grant{{Action: access.Consume, Patterns: []string{"r"}}})
	}); r.Err != nil {
		t.Fatalf("user: %v", r.Err)
	}
	c.settle()
	// Find a partition node 1 does not own, and put a record there.
	part, via := int64(-1), 0
	for p := int64(0); p < 3 && part < 0; p++ {
		r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
			nd.Produce(now, tok, "r", []node.ProduceMessage{{Partition: p, Payload: []byte("x")}})
		})
		if r.Err != nil {
			t.Fatalf("produce: %v", r.Err)
		}
		if owner, _ := c.nodes[via].PartitionOwner(topicIDOf(t, c, "r"), uint32(p)); owner != 1 {
			part = p
		}
	}
	c.advance(1_000_000_000)
	consume := func(actor string) node.Response {
		return c.do(via, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Actor: actor, Topic: "r", Partition: part, Max: 1})
		})
	}
	if r := consume("ghost"); !errors.Is(r.Err, node.ErrForbidden) {
		t.Fatalf("a routed consume for an unknown user: %+v", r)
	}
	r := consume("reader") // the refused consume leased nothing: the record is there
	if r.Err != nil || len(r.Messages) != 1 {
		t.Fatalf("a routed consume for a reader: %+v", r)
	}
	// An ack refused at the owner settles nothing: the record comes back once its lease
	// (the topic's default visibility timeout) runs out.
	h := r.Messages[0].ReceiptHandle
	if a := c.do(via, func(nd *node.Node, now int64, tok uint64) {
		nd.AckAs(now, tok, "ghost", "r", []string{h}, node.AckSettle)
	}); a.Err == nil && (len(a.Results) != 1 || a.Results[0] == nil) {
		t.Fatalf("a routed ack for an unknown user: %+v", a)
	}
	c.advance(31_000_000_000)
	if again := consume("reader"); again.Err != nil || len(again.Messages) != 1 || again.Messages[0].Offset != r.Messages[0].Offset {
		t.Fatalf("after a refused ack and the lease's end: %+v", again)
	}
}

func topicIDOf(t *testing.T, c *cluster, name string) uint64 {
	t.Helper()
	r := c.do(0, func(nd *node.Node, now int64, tok uint64) { nd.GetTopic(now, tok, name) })
	if r.Err != nil {
		t.Fatalf("get %s: %v", name, r.Err)
	}
	return r.Topic.ID
}

// The shell may hand the root hash after the start (it hashes while the node recovers):
// the node makes the root user then, and a second hash changes nothing.
func TestRootHashSetLater(t *testing.T) {
	h := newHarnessWith(t, nil, node.Config{NodeID: "n1", Dispatch: dispatch.Config{LingerNs: -1}})
	if us := h.n.Users(); len(us) != 0 {
		t.Fatalf("users before a hash: %+v", us)
	}
	h.n.SetRootHash(h.now, rootHashOf('r'))
	h.settle()
	h.n.SetRootHash(h.now, rootHashOf('s'))
	h.advance(2 * node.RootRetryNs)
	if us := h.n.Users(); len(us) != 1 || us[0].Hash != rootHashOf('r') {
		t.Fatalf("users: %+v", us)
	}
}
