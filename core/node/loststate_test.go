package node_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// A member whose data directory is wiped and that restarts under its old id stops with
// meta.ErrLostState, naming the way back; the leader and the other follower go on.
// (etcd raft itself would panic on the leader's first heartbeat: "tocommit out of
// range".)
func TestWipedMemberStopsAndTheClusterGoesOn(t *testing.T) {
	c := newCluster(t, 3)
	l := c.awaitLeader(10_000_000_000)
	for i := range 5 {
		if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
			nd.CreateTopic(now, tok, node.TopicSpec{Name: fmt.Sprintf("t%d", i), Partitions: u32(1)})
		}); r.Err != nil {
			t.Fatalf("create t%d: %v", i, r.Err)
		}
	}
	c.advance(1_000_000_000)
	f := (l + 1) % 3
	c.disks[f] = sim.NewDisk(rng.New(77), sim.DiskConfig{}) // the directory is gone
	c.mayFail[f] = true
	c.restart(f)
	c.advance(3_000_000_000)

	err := c.failed[f]
	if !errors.Is(err, meta.ErrLostState) || !strings.Contains(err.Error(), "join under a new id") {
		t.Fatalf("the wiped member ended with %v, want meta.ErrLostState naming the way back", err)
	}
	l = c.awaitLeader(10_000_000_000)
	if l == f {
		t.Fatalf("the wiped member leads")
	}
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "after", Partitions: u32(1)})
	}); r.Err != nil {
		t.Fatalf("the cluster without the wiped member refuses a write: %v", r.Err)
	}
	for i, nd := range c.nodes {
		if i != f && nd.Failed() != nil {
			t.Fatalf("node %d failed too: %v", i+1, nd.Failed())
		}
	}
}
