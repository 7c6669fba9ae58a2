package node_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/narad/narad/core/node"
)

// Commits that queue on a partition while one is in flight (from every node's
// dispatcher) go to the log together: fewer log commits than jobs, and every message
// is consumed once, at its own offset, with no gap.
func TestQueuedCommitsGoTogether(t *testing.T) {
	c := newCluster(t, 3)
	c.advance(5_000_000_000)
	l := c.leader()
	if r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "m", Partitions: u32(1)})
	}); r.Err != nil {
		t.Fatalf("create: %v", r.Err)
	}
	c.advance(1_000_000_000)
	const rounds = 5
	for round := range rounds { // every node produces to the one partition at once
		for i := range c.nodes {
			c.tok++
			body := fmt.Sprintf("r%d-n%d", round, i+1)
			c.nodes[i].Produce(c.now, c.tok, "m", []node.ProduceMessage{{Partition: 0, Payload: []byte(body)}})
		}
		c.settle()
	}
	c.advance(1_000_000_000)
	var commits, jobs uint64
	for _, nd := range c.nodes {
		s := nd.Stats()
		commits, jobs = commits+s.PartitionCommits, jobs+s.CommitJobs
	}
	if jobs != 3*rounds || commits >= jobs {
		t.Fatalf("%d jobs in %d log commits: want %d jobs, some together", jobs, commits, 3*rounds)
	}
	var offsets []uint64
	seen := map[string]bool{}
	for range 3 * rounds {
		r := c.do(0, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Topic: "m", Partition: 0, Max: 100})
		})
		for _, m := range r.Messages {
			offsets = append(offsets, m.Offset)
			seen[string(m.Payload)] = true
		}
	}
	slices.Sort(offsets)
	if len(seen) != 3*rounds || len(offsets) != 3*rounds || offsets[0] != 0 || offsets[len(offsets)-1] != 3*rounds-1 {
		t.Fatalf("consumed %d distinct of %d at offsets %v", len(seen), 3*rounds, offsets)
	}
}
