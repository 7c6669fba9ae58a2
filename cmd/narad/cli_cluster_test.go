package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/narad/narad/client"
)

// TestToolsOnThreeNodes runs the command line and the client package against a cluster
// of three `narad serve` processes: members, a topic made through any node, produce and
// consume spread over the nodes; then one node is killed (SIGKILL) and both go on through
// a node list that names it first.
func TestToolsOnThreeNodes(t *testing.T) {
	_, ms := clusterUnderTest(t)
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.addr)
	}
	u := cliAs(t, strings.Join(addrs, ","), "admin", testAdminPassword)
	members := jsonOut[struct{ Members []client.Member }](t, u.ok("cluster", "members", "-o", "json")).Members
	leaders := 0
	for _, m := range members {
		if m.Leader {
			leaders++
		}
	}
	if len(members) != clusterNodes || leaders != 1 {
		t.Fatalf("members: %+v", members)
	}
	u.ok("topic", "create", "orders", "--partitions", "3")
	for _, m := range ms {
		eventually(t, clusterFormBound, fmt.Sprintf("node %d knows the topic", m.id), func() bool {
			return cliAs(t, m.addr, "admin", testAdminPassword).run("", "topic", "get", "orders").code == 0
		})
	}
	var lines strings.Builder
	for i := range 30 {
		fmt.Fprintf(&lines, "line-%d\n", i)
	}
	if out := u.okIn(lines.String(), "produce", "orders", "--batch", "7"); out != "accepted 30\n" {
		t.Fatalf("produce: %q", out)
	}
	got := map[string]int{}
	var handles strings.Builder
	for _, m := range messageLines(t, u.ok("consume", "orders", "--count", "30", "--max", "10", "--wait", "1s")) {
		got[m.text(t)]++
		fmt.Fprintln(&handles, m.ReceiptHandle)
		if m.Offset == 0 && m.Partition == 0 {
			if r := messageLines(t, u.ok("replay", "orders", "--partition", "0", "--offset", "0")); r[0].text(t) != m.text(t) {
				t.Fatalf("replay of 0/0: %+v, consumed %+v", r, m)
			}
		}
	}
	if len(got) != 30 {
		t.Fatalf("consumed %d distinct lines of 30: %v", len(got), got)
	}
	if out := u.okIn(handles.String(), "ack", "orders"); out != "acked 30 of 30\n" { // each routed to its owner
		t.Fatalf("ack: %q", out)
	}
	u.ok("cluster", "moves")
	u.ok("cluster", "rebalance")
	if d := jsonOut[client.Decommission](t, u.ok("cluster", "decommission", "3", "--dry-run", "-o", "json")); !d.DryRun {
		t.Fatalf("decommission --dry-run: %+v", d)
	}
	u.fails(exitConflict, "409", "cluster", "forget", "3", "--dry-run") // alive
	if s := jsonOut[benchSummary](t, u.ok("bench", "b3", "--create", "--messages", "60", "--workers", "3", "-o", "json")); s.Messages != 60 ||
		s.Nodes != clusterNodes || s.Errors != 0 {
		t.Fatalf("bench over the three nodes: %+v", s)
	}
	c := clientOf(t, addrs, "admin", testAdminPassword)
	clientRoundTrip(t, c, nil, 12)
	cliMove(t, u)
	victim, owned := failover(t, ms, members)
	var leader *member
	for _, m := range members {
		if m.Leader {
			leader = ms[m.ID-1]
		}
	}
	waitMarkedDead(t, leader, victim)
	f := jsonOut[client.Forget](t, cliAs(t, leader.addr, "admin", testAdminPassword).ok("cluster", "forget",
		strconv.FormatUint(victim.id, 10), "--dry-run", "-o", "json"))
	ofOrders := 0
	for _, p := range f.Partitions {
		if p.Topic == "orders" {
			ofOrders++
		}
	}
	if !f.DryRun || f.Member != victim.id || ofOrders != owned {
		t.Fatalf("forget --dry-run of the dead node: %+v", f)
	}
}

// cliMove moves partition 0 of orders to another member with narad cluster move and
// waits until the move is done (narad cluster moves lists none, the owner changed).
func cliMove(t *testing.T, u *cliUser) {
	owner := func() string {
		return jsonOut[client.Topic](t, u.ok("topic", "get", "orders", "-o", "json")).PartitionStats[0].OwnerNode
	}
	from := owner()
	to := "1"
	if from == "1" {
		to = "2"
	}
	if out := u.ok("cluster", "move", "orders", "0", "--to", to); out != "moving orders/0 to member "+to+"\n" {
		t.Fatalf("move: %q", out)
	}
	eventually(t, clusterFormBound, "the move of orders/0 is done", func() bool {
		return u.ok("cluster", "moves", "-o", "json") == `{"moves":[]}`+"\n" && owner() == to
	})
	u.fails(exitNotFound, "404", "cluster", "abort", "orders", "0") // no move of it any more
}

// clientRoundTrip produces n messages through c (pinned to part when set), consumes them
// and acks them in one batch.
func clientRoundTrip(t *testing.T, c *client.Client, part *uint32, n int) {
	t.Helper()
	ctx := context.Background()
	batch := make([]client.BatchMessage, n)
	for i := range batch {
		batch[i] = client.BatchMessage{Payload: fmt.Appendf(nil, "rt-%d", i), Partition: part}
	}
	if acc, err := c.ProduceBatch(ctx, "orders", batch); err != nil || acc != n {
		t.Fatalf("batch produce: %d %v", acc, err)
	}
	ms := clientMessages(t, c, "orders", n, part)
	handles := make([]string, len(ms))
	for i, m := range ms {
		handles[i] = m.ReceiptHandle
	}
	res, err := c.AckBatch(ctx, "orders", handles, client.Settle)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("ack %d: %v", i, r.Err)
		}
	}
}

// failover kills a member that does not lead and uses the CLI and the client through a
// node list that starts with it: a refused connection moves each call to the next node.
// It returns the killed member and how many partitions it owned.
func failover(t *testing.T, ms []*member, members []client.Member) (*member, int) {
	var victim *member
	for _, m := range members {
		if !m.Leader && victim == nil {
			victim = ms[m.ID-1]
		}
	}
	u := cliAs(t, strings.Join([]string{ms[0].addr, ms[1].addr, ms[2].addr}, ","), "admin", testAdminPassword)
	tp := jsonOut[client.Topic](t, u.ok("topic", "get", "orders", "-o", "json"))
	part, owned := -1, 0
	for _, p := range tp.PartitionStats {
		if p.OwnerNode != strconv.FormatUint(victim.id, 10) {
			part = int(p.Index)
		} else {
			owned++
		}
	}
	if part < 0 {
		t.Fatalf("every partition is owned by node %d: %+v", victim.id, tp.PartitionStats)
	}
	victim.down.Store(true)
	victim.c.kill()
	t.Logf("killed node %d; partition %d is owned by a live node", victim.id, part)
	urls := []string{victim.addr}
	for _, m := range ms {
		if m != victim {
			urls = append(urls, m.addr)
		}
	}
	uf := cliAs(t, strings.Join(urls, ","), "admin", testAdminPassword)
	if out := uf.ok("cluster", "members"); strings.Count(out, "\n") != clusterNodes+1 {
		t.Fatalf("members after the kill: %q", out)
	}
	p := strconv.Itoa(part)
	uf.ok("produce", "orders", "after-the-kill", "--partition", p)
	after := messageLines(t, uf.ok("consume", "orders", "--partition", p, "--count", "1", "--wait", "2s", "--ack"))
	if len(after) != 1 || after[0].text(t) != "after-the-kill" {
		t.Fatalf("consume after the kill: %+v", after)
	}
	cf := clientOf(t, urls, "admin", testAdminPassword)
	if _, err := cf.Members(context.Background()); err != nil {
		t.Fatalf("client members after the kill: %v", err)
	}
	pp := uint32(part)
	clientRoundTrip(t, cf, &pp, 5)
	return victim, owned
}
