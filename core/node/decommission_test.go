package node_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wire"
)

// decommissionOf asks node via to decommission member id (or cancel, or dry-run it).
func decommissionOf(c *cluster, via int, id uint64, dry bool) node.Response {
	return c.do(via, func(nd *node.Node, now int64, tok uint64) { nd.DecommissionMember(now, tok, id, dry) })
}

// A member that owns no partition is decommissioned through a follower: the dry run
// allows it and changes nothing, the member is removed, it stops with ErrRemoved, and
// the three left keep three voters (the learner promoted in the same change).
func TestDecommissionRemovesAVoter(t *testing.T) {
	c := newClusterOf(t, 4, 3)
	c.advance(8_000_000_000)
	l := c.leader()
	gone := (l + 1) % 3 // a voter, not the leader
	via := (l + 2) % 3
	id := uint64(gone + 1)
	if r := decommissionOf(c, via, 9, true); !errors.Is(r.Err, node.ErrMemberNotFound) {
		t.Fatalf("dry run of an unknown member: %v", r.Err)
	}
	dry := decommissionOf(c, via, id, true)
	if dry.Err != nil || dry.Decommission == nil || dry.Decommission.Refusal != "" || !c.nodes[via].IsMember(id) {
		t.Fatalf("dry run: %v %+v", dry.Err, dry.Decommission)
	}
	c.mayFail[gone] = true
	if r := decommissionOf(c, via, id, false); r.Err != nil || r.Decommission == nil {
		t.Fatalf("decommission: %v", r.Err)
	}
	c.advance(5_000_000_000)
	if err := c.failed[gone]; !errors.Is(err, meta.ErrRemoved) {
		t.Fatalf("the removed node ended with %v (member %v removed %v; %s)", err, c.nodes[via].IsMember(id),
			c.nodes[via].MemberRemoved(id), c.members(via))
	}
	for i := range c.nodes {
		if i == gone {
			continue
		}
		if v := c.nodes[i].Voters(); slices.Contains(v, id) || len(v) != 3 || !c.nodes[i].MemberRemoved(id) {
			t.Fatalf("node %d: voters %v, want three without %d (removed %v)", i+1, v, id,
				c.nodes[i].MemberRemoved(id))
		}
	}
	if r := decommissionOf(c, via, id, false); !errors.Is(r.Err, node.ErrRefused) {
		t.Fatalf("decommission of a removed member: %v", r.Err)
	}
}

// The metastore leader decommissioned: it hands its leadership to another voter, that
// one removes it, and it stops; the cluster still takes writes.
func TestDecommissionedLeaderHandsOnItsLeadership(t *testing.T) {
	c := newClusterOf(t, 4, 3)
	c.advance(8_000_000_000)
	l := c.leader()
	c.mayFail[l] = true
	if r := decommissionOf(c, l, uint64(l+1), false); r.Err != nil {
		t.Fatalf("decommission: %v", r.Err)
	}
	c.advance(8_000_000_000)
	if err := c.failed[l]; !errors.Is(err, meta.ErrRemoved) {
		t.Fatalf("the removed leader ended with %v", err)
	}
	next := c.awaitLeader(10_000_000_000)
	if next == l {
		t.Fatalf("the removed node still leads")
	}
	if r := c.do(next, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "after", Partitions: u32(3)})
	}); r.Err != nil {
		t.Fatalf("create after the removal: %v", r.Err)
	}
}

// Five voters, two of them cut off: removing a live one would leave two healthy voters
// of four; the answer names the quorum guard, and the member stays.
func TestDecommissionRefusedByTheQuorumGuard(t *testing.T) {
	c := newCluster(t, 5)
	c.advance(8_000_000_000)
	l := c.leader()
	a, b, live := (l+1)%5, (l+2)%5, (l+3)%5
	c.cut[uint64(a+1)], c.cut[uint64(b+1)] = true, true
	c.advance(8_000_000_000)
	l = c.awaitLeader(10_000_000_000)
	r := decommissionOf(c, l, uint64(live+1), false)
	if !errors.Is(r.Err, node.ErrRefused) || !strings.Contains(r.Err.Error(), "quorum") {
		t.Fatalf("decommission: %v", r.Err)
	}
	c.advance(3_000_000_000)
	if !c.nodes[l].IsMember(uint64(live + 1)) {
		t.Fatalf("the member was removed")
	}
}

// A node decommissioned while its dispatcher still holds records it answered 202 (its
// commits to their owners are lost for a while, then sent again after the commit timeout) refuses new produces and is not removed
// until those records are committed at their owners; then it stops, and every one of
// them is consumed.
func TestDecommissionedNodeDeliversWhatItAccepted(t *testing.T) {
	c := newClusterOf(t, 4, 3)
	c.advance(8_000_000_000)
	gone := 3 // member 4, a learner: it owns no partition of a topic created while it was cut
	c.cut[4] = true
	c.advance(8_000_000_000)
	l := c.awaitLeader(10_000_000_000)
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "d", Partitions: u32(3)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.cut[4] = false
	c.advance(8_000_000_000)
	c.drop = func(from, _ uint64, body []byte) bool {
		m, err := wire.Decode(body)
		_, commit := m.(wire.CommitRequest)
		return from == 4 && err == nil && commit
	}
	msgs := make([]node.ProduceMessage, 5)
	for i := range msgs {
		msgs[i] = node.ProduceMessage{Partition: int64(i % 3), Payload: []byte{byte('a' + i)}}
	}
	if r := c.do(gone, func(nd *node.Node, now int64, tok uint64) { nd.Produce(now, tok, "d", msgs) }); r.Err != nil {
		t.Fatalf("produce through the node to decommission: %v", r.Err)
	}
	c.mayFail[gone] = true
	if r := decommissionOf(c, l, 4, false); r.Err != nil {
		t.Fatalf("decommission: %v", r.Err)
	}
	c.advance(3_000_000_000)
	if err := c.failed[gone]; err != nil || !c.nodes[l].IsMember(4) {
		t.Fatalf("the node was removed with records not committed: %v", err)
	}
	if r := c.do(gone, func(nd *node.Node, now int64, tok uint64) { nd.Produce(now, tok, "d", msgs[:1]) }); !errors.Is(r.Err, node.ErrNotReady) {
		t.Fatalf("produce through a draining node: %v", r.Err)
	}
	c.drop = nil
	c.advance(40_000_000_000) // the lost commits are sent again after the dispatcher's timeout
	if err := c.failed[gone]; !errors.Is(err, meta.ErrRemoved) {
		t.Fatalf("the drained node ended with %v", err)
	}
	got := 0
	for p := range int64(3) {
		r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Topic: "d", Partition: p, Max: 10})
		})
		got += len(r.Messages)
	}
	if got != len(msgs) {
		t.Fatalf("consumed %d of the %d messages answered 202", got, len(msgs))
	}
}
