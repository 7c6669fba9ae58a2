package node_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// cluster drives nodes 1..n on their own disks with a perfect network between them
// (every message arrives, in order), except to or from a node that is cut off.
type cluster struct {
	t     *testing.T
	now   int64
	nodes []*node.Node
	disks []*sim.Disk
	ops   [][]disk.Op
	msgs  []envelope
	cut   map[uint64]bool
	// drop, when set, loses the messages it is true for (as a cut does, one kind at a time).
	drop func(from, to uint64, body []byte) bool
	// failNext counts the next sends from one node to another that fail at the sender
	// (the node is told, as the shell tells it: SendFailed).
	failNext map[[2]uint64]int
	resps    map[uint64]node.Response
	tok      uint64

	voters   []uint64
	restarts int
	// mayFail names the nodes whose failure the test expects: the node stops (it is cut
	// off, as its exited process would be) and failed holds the reason.
	mayFail  map[int]bool
	failed   map[int]error
	withRoot bool // each node's config carries a root hash of its own (rootHashOf)
	// configure, when set, changes every node's config (restarts included).
	configure func(*node.Config)
}

type envelope struct {
	from uint64
	out  node.Outbound
}

func newCluster(t *testing.T, n int) *cluster { return newClusterOf(t, n, n) }

// newClusterOf starts n nodes of which the first v are the metastore's initial voters;
// the others join (as raft learners).
func newClusterOf(t *testing.T, n, v int) *cluster { return newClusterWith(t, n, v, false) }

// newClusterWith is newClusterOf whose nodes, withRoot, make the root user.
func newClusterWith(t *testing.T, n, v int, withRoot bool) *cluster {
	return newClusterConfigured(t, n, v, withRoot, nil)
}

// newClusterConfigured is newClusterWith whose nodes' configs configure changes (nil: none).
func newClusterConfigured(t *testing.T, n, v int, withRoot bool, configure func(*node.Config)) *cluster {
	c := &cluster{t: t, now: 1_000_000_000, cut: map[uint64]bool{}, failNext: map[[2]uint64]int{},
		resps: map[uint64]node.Response{}, withRoot: withRoot, mayFail: map[int]bool{},
		failed: map[int]error{}, configure: configure}
	var voters []uint64
	for i := 1; i <= v; i++ {
		voters = append(voters, uint64(i))
	}
	c.voters = voters
	for i := 1; i <= n; i++ {
		d := sim.NewDisk(rng.New(uint64(i)), sim.DiskConfig{})
		nd := node.New(c.config(i), rng.New(uint64(100+i)))
		c.nodes, c.disks, c.ops = append(c.nodes, nd), append(c.disks, d), append(c.ops, nil)
		nd.Open(c.now)
	}
	return c
}

func (c *cluster) config(i int) node.Config {
	cfg := node.Config{NodeID: fmt.Sprintf("n%d", i), Addr: fmt.Sprintf("n%d:7942", i),
		Meta: meta.Config{ID: uint64(i), Voters: c.voters}, Dispatch: dispatch.Config{LingerNs: -1}}
	if c.withRoot {
		cfg.RootHash = rootHashOf(byte('0' + i))
	}
	if c.configure != nil {
		c.configure(&cfg)
	}
	return cfg
}

// restart crashes node index i (its disk loses what was not synced, its ops and
// messages in flight are gone) and starts a new process on the same disk.
func (c *cluster) restart(i int) {
	c.disks[i].Crash()
	c.ops[i] = nil
	c.msgs = slices.DeleteFunc(c.msgs, func(e envelope) bool { return e.from == uint64(i+1) || e.out.To == uint64(i+1) })
	c.restarts++
	c.nodes[i] = node.New(c.config(i+1), rng.New(uint64(1000*c.restarts+i)))
	c.nodes[i].Open(c.now)
}

// settle delivers every op and message until none is left.
func (c *cluster) settle() {
	for n := 0; ; n++ {
		if n > 1_000_000 {
			c.t.Fatalf("the cluster never settles")
		}
		moved := false
		for i, nd := range c.nodes {
			rd := nd.Ready()
			c.ops[i] = append(c.ops[i], rd.Ops...)
			for _, r := range rd.Responses {
				c.resps[r.Token] = r
			}
			for _, m := range rd.Messages {
				if l := [2]uint64{uint64(i + 1), m.To}; c.failNext[l] > 0 {
					c.failNext[l]--
					nd.SendFailed(c.now, m.To, m.Body)
					moved = true
					continue
				}
				c.msgs = append(c.msgs, envelope{from: uint64(i + 1), out: m})
			}
			if rd.Failed != nil && c.failed[i] == nil {
				if !c.mayFail[i] {
					c.t.Fatalf("node %d failed: %v", i+1, rd.Failed)
				}
				c.failed[i], c.cut[uint64(i+1)] = rd.Failed, true
			}
			if len(c.ops[i]) > 0 {
				op := c.ops[i][0]
				c.ops[i] = c.ops[i][1:]
				nd.DiskDone(c.now, disk.Apply(c.disks[i], op))
				moved = true
			}
		}
		if len(c.msgs) > 0 {
			m := c.msgs[0]
			c.msgs = c.msgs[1:]
			if !c.cut[m.from] && !c.cut[m.out.To] && (c.drop == nil || !c.drop(m.from, m.out.To, m.out.Body)) {
				c.nodes[m.out.To-1].Receive(c.now, m.from, m.out.Body)
			}
			moved = true
		}
		if !moved {
			return
		}
	}
}

// advance moves time by dt in steps of the nodes' earliest deadlines.
func (c *cluster) advance(dt int64) {
	end := c.now + dt
	for {
		c.settle()
		next := end
		for _, nd := range c.nodes {
			if at, ok := nd.NextDeadline(); ok && at < next {
				next = at
			}
		}
		c.now = max(c.now, next)
		for _, nd := range c.nodes {
			nd.Tick(c.now)
		}
		if c.now >= end {
			c.settle()
			return
		}
	}
}

func (c *cluster) do(i int, f func(nd *node.Node, now int64, tok uint64)) node.Response {
	c.tok++
	tok := c.tok
	f(c.nodes[i], c.now, tok)
	c.settle()
	r, ok := c.resps[tok]
	if !ok {
		c.t.Fatalf("request %d to node %d not answered", tok, i+1)
	}
	return r
}

func (c *cluster) members(i int) string {
	r := c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
	if r.Err != nil {
		return r.Err.Error()
	}
	return fmt.Sprint(r.Members)
}

// awaitLeader advances time until some node's metastore replica leads, for at most
// boundNs, and returns it. Raft's election timeouts are random (crypto/rand, outside the
// simulators), so after a restart an election may take a few terms.
func (c *cluster) awaitLeader(boundNs int64) int {
	for waited := int64(0); ; waited += 100_000_000 {
		if l := c.leader(); l >= 0 {
			return l
		}
		if waited >= boundNs {
			c.t.Fatalf("no metastore leader %d ms after asking", boundNs/1_000_000)
		}
		c.advance(100_000_000)
	}
}

// leader is the node whose metastore replica leads, -1 for none.
func (c *cluster) leader() int {
	l := -1
	for i := range c.nodes {
		r := c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
		for _, m := range r.Members {
			if m.Leader && m.ID == uint64(i+1) {
				if l >= 0 {
					c.t.Fatalf("nodes %d and %d both lead", l+1, i+1)
				}
				l = i
			}
		}
	}
	return l
}

// Three nodes elect a metastore leader over their messages, join the members through
// their heartbeats, see a topic created on the leader with its partitions spread over
// all three, and mark a node that falls silent dead.
func TestThreeNodesFormACluster(t *testing.T) {
	c := newCluster(t, 3)
	c.advance(5_000_000_000)
	l := c.leader()
	if l < 0 {
		t.Fatalf("no leader after 5 s")
	}
	want := func(dead uint64) string {
		var ms []node.MemberInfo
		for id := uint64(1); id <= 3; id++ {
			ms = append(ms, node.MemberInfo{ID: id, Addr: fmt.Sprintf("n%d:7942", id), Alive: id != dead, Leader: int(id) == l+1, Voter: true,
				OwnedPartitions: 0})
		}
		return fmt.Sprint(ms)
	}
	if got := c.members(l); got != want(0) {
		t.Fatalf("members on the leader: %s, want %s", got, want(0))
	}
	r := c.do(l, func(nd *node.Node, now int64, tok uint64) {
		nd.CreateTopic(now, tok, node.TopicSpec{Name: "orders", Partitions: u32(3)})
	})
	if r.Err != nil {
		t.Fatalf("create on the leader: %v", r.Err)
	}
	c.advance(1_000_000_000)
	for i := range c.nodes { // every replica has the topic and its owners
		r := c.do(i, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
		for _, m := range r.Members {
			if r.Err != nil || m.OwnedPartitions != 1 {
				t.Fatalf("node %d: partitions not spread one per member: %+v %v", i+1, r.Members, r.Err)
			}
		}
	}
	testRemoteCommits(t, c)
	silent := uint64(1 + (l+1)%3)
	c.cut[silent] = true
	c.advance(8_000_000_000)
	got := c.members(l)
	if want := fmt.Sprintf("{%d n%d:7942 false", silent, silent); !strings.Contains(got, want) {
		t.Fatalf("node %d silent for 8 s is not marked dead: %s", silent, got)
	}
	delete(c.cut, silent)
	c.advance(3_000_000_000)
	l = c.leader()
	r = c.do(l, func(nd *node.Node, now int64, tok uint64) { nd.ListMembers(now, tok) })
	for _, m := range r.Members {
		if !m.Alive {
			t.Fatalf("node %d heard again is not alive: %+v", silent, r.Members)
		}
	}
}

// testRemoteCommits: a message produced on any node to any partition is committed by the
// partition's owner (over CommitRequest and CommitResponse) and consumed there.
func testRemoteCommits(t *testing.T, c *cluster) {
	for from := range c.nodes {
		for p := int64(0); p < 3; p++ {
			body := fmt.Sprintf("from %d to %d", from+1, p)
			r := c.do(from, func(nd *node.Node, now int64, tok uint64) {
				nd.Produce(now, tok, "orders", []node.ProduceMessage{{Partition: p, Payload: []byte(body)}})
			})
			if r.Err != nil || r.Accepted != 1 {
				t.Fatalf("produce on node %d: %+v", from+1, r)
			}
		}
	}
	c.advance(1_000_000_000)
	got := map[string]bool{}
	for i := range c.nodes {
		for p := int64(0); p < 3; p++ {
			r := c.do(i, func(nd *node.Node, now int64, tok uint64) {
				nd.Consume(now, tok, node.ConsumeRequest{Topic: "orders", Partition: p, Max: 10})
			})
			for _, m := range r.Messages {
				got[fmt.Sprintf("%s@%d", m.Payload, i+1)] = true
			}
		}
	}
	if len(got) != 9 {
		t.Fatalf("consumed %d of 9 messages: %v", len(got), got)
	}
	// Each partition's messages are on one node only: its owner.
	owner := map[string]string{}
	for k := range got {
		var from, p, at int
		fmt.Sscanf(k, "from %d to %d@%d", &from, &p, &at)
		pk := fmt.Sprint(p)
		if o, ok := owner[pk]; ok && o != fmt.Sprint(at) {
			t.Fatalf("partition %d consumed on nodes %s and %d", p, o, at)
		}
		owner[pk] = fmt.Sprint(at)
	}
}
