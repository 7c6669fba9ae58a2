package node_test

import (
	"testing"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// A spread consume answered by one owner ends its parts at the others (wire
// ConsumeCancel): a record committed there later is not leased for the answered consume
// and then released by the entry node, it stays available, and the other owners answer
// their parts at once rather than at the end of the long poll.
func TestSpreadConsumeAnsweredCancelsTheOtherOwners(t *testing.T) {
	c, ownerOf := routedCluster(t)
	me := ownerOf[0]
	var remote int64 = -1
	for p, o := range ownerOf {
		if o != me && remote < 0 {
			remote = p
		}
	}
	for range 3 { // lease the three messages: every partition is empty for now
		if r := consumeOn(c, me, -1); r.Err != nil || len(r.Messages) != 1 {
			t.Fatalf("drain: %+v", r)
		}
	}
	releases, cancels := 0, 0
	c.drop = func(from, _ uint64, body []byte) bool {
		m, err := wire.Decode(body)
		if a, ok := m.(wire.AckRequest); err == nil && ok && from == uint64(me+1) &&
			node.AckMode(a.Mode) == node.AckRelease {
			releases++
		}
		if _, ok := m.(wire.ConsumeCancel); err == nil && ok {
			cancels++
		}
		return false
	}
	c.tok++
	tok := c.tok
	c.nodes[me].Consume(c.now, tok, node.ConsumeRequest{Topic: "r", Partition: -1, Max: 10,
		WaitNs: 20_000_000_000})
	c.settle()
	if _, answered := c.resps[tok]; answered {
		t.Fatal("a long poll with nothing available answered at once")
	}
	produce := func(part int64, body string) {
		if r := c.do(me, func(nd *node.Node, now int64, tok uint64) {
			nd.Produce(now, tok, "r", []node.ProduceMessage{{Partition: part, Payload: []byte(body)}})
		}); r.Err != nil {
			t.Fatalf("produce: %v", r.Err)
		}
	}
	produce(0, "local")
	c.advance(100_000_000)
	if r, ok := c.resps[tok]; !ok || r.Err != nil || len(r.Messages) != 1 || string(r.Messages[0].Payload) != "local" {
		t.Fatalf("the long poll: %+v (answered %v)", r, ok)
	}
	produce(remote, "remote")
	c.advance(100_000_000)
	if releases != 0 {
		t.Fatalf("%d releases: the other owners' parts leased records for an answered consume", releases)
	}
	if r := consumeOn(c, ownerOf[remote], remote); r.Err != nil || len(r.Messages) != 1 ||
		string(r.Messages[0].Payload) != "remote" {
		t.Fatalf("the later record: %+v", r)
	}
	if cancels != 2 {
		t.Fatalf("%d cancels sent, want one to each other owner", cancels)
	}
}
