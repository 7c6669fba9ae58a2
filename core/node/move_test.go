package node_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/narad/narad/core/node"
)

// replayAll reads partition p of "r" offset by offset through node via, from first up
// to the first offset that answers nothing.
func replayAll(c *cluster, via int, p int64, first uint64) []string {
	var out []string
	for off := first; ; off++ {
		r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Topic: "r", Partition: p, Max: 1, HasOffset: true, Offset: off})
		})
		if r.Err != nil || len(r.Messages) == 0 {
			return out
		}
		m := r.Messages[0]
		out = append(out, fmt.Sprintf("%d=%s@%d", m.Offset, m.Payload, m.TimestampMs))
	}
}

func produceTo(t *testing.T, c *cluster, via int, p int64, body string) {
	t.Helper()
	if r := c.do(via, func(nd *node.Node, now int64, tok uint64) {
		nd.Produce(now, tok, "r", []node.ProduceMessage{{Partition: p, Payload: []byte(body)}})
	}); r.Err != nil {
		t.Fatalf("produce %s: %v", body, r.Err)
	}
}

func moveOf(c *cluster, via int, p uint32, to uint64) node.Response {
	return c.do(via, func(nd *node.Node, now int64, tok uint64) { nd.MovePartition(now, tok, "r", p, to) })
}

// A partition moves to another member while producers write to it: the destination
// copies it, freezes, cuts over under epoch 1 and serves every record at its offset and
// with its timestamp; acks made at the source hold at the destination (only the unacked
// records are delivered there); the source removes its copy.
func TestMovePartitionCopiesRecordsAndAcks(t *testing.T) {
	c, ownerOf := routedCluster(t) // one record per partition already
	src := ownerOf[0]
	dst := (src + 1) % 3
	for i := range 20 {
		produceTo(t, c, i%3, 0, fmt.Sprintf("m%d", i))
	}
	c.advance(1_000_000_000)
	acked := map[string]bool{}
	r := c.do(src, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "r", Partition: 0, Max: 6})
	})
	for _, m := range r.Messages {
		if ack := c.do(src, func(nd *node.Node, now int64, tok uint64) {
			nd.Ack(now, tok, "r", []string{m.ReceiptHandle}, node.AckSettle)
		}); ack.Err != nil || ack.Results[0] != nil {
			t.Fatalf("ack: %+v", ack)
		}
		acked[string(m.Payload)] = true
	}
	before := replayAll(c, dst, 0, 0)
	if len(before) != 21 {
		t.Fatalf("replay before the move: %v", before)
	}
	if mv := moveOf(c, dst, 0, uint64(dst+1)); mv.Err != nil {
		t.Fatalf("move: %v", mv.Err)
	}
	for i := range 5 { // produces while the copy runs
		produceTo(t, c, i%3, 0, fmt.Sprintf("during%d", i))
		c.advance(20_000_000)
	}
	c.advance(5_000_000_000)
	for i := range c.nodes {
		if owner, _ := c.nodes[i].PartitionOwner(topicIDOf(t, c, "r"), 0); owner != uint64(dst+1) ||
			c.nodes[i].PartitionEpoch(topicIDOf(t, c, "r"), 0) != 1 || len(c.nodes[i].Moves()) != 0 {
			t.Fatalf("node %d: owner %d epoch %d moves %v", i+1, owner,
				c.nodes[i].PartitionEpoch(topicIDOf(t, c, "r"), 0), c.nodes[i].Moves())
		}
	}
	after := replayAll(c, src, 0, 0)
	if strings.Join(after[:21], " ") != strings.Join(before, " ") || len(after) != 26 {
		t.Fatalf("replay after the move:\n%v\nbefore:\n%v", after, before)
	}
	got := map[string]int{}
	for range 10 {
		r := c.do(src, func(nd *node.Node, now int64, tok uint64) {
			nd.Consume(now, tok, node.ConsumeRequest{Topic: "r", Partition: 0, Max: 100})
		})
		for _, m := range r.Messages {
			got[string(m.Payload)]++
			c.do(src, func(nd *node.Node, now int64, tok uint64) {
				nd.Ack(now, tok, "r", []string{m.ReceiptHandle}, node.AckSettle)
			})
		}
	}
	if len(got) != 26-len(acked) {
		t.Fatalf("consumed after the move %d records, want the %d not acked: %v", len(got), 26-len(acked), got)
	}
	for body := range acked {
		if got[body] > 0 {
			t.Fatalf("%s acked at the source, delivered again at the destination", body)
		}
	}
	st := c.nodes[dst].MoveStats()
	if st.Done != 1 || st.BytesCopied == 0 || st.FreezeNs.Count != 1 {
		t.Fatalf("destination's move stats %+v", st)
	}
	if c.nodes[src].MoveStats().Released != 1 {
		t.Fatalf("the source did not release its copy: %+v", c.nodes[src].MoveStats())
	}
	for name := range c.disks[src].DurableFiles() {
		if strings.Contains(name, fmt.Sprintf("%016x-0", topicIDOf(t, c, "r"))) {
			t.Fatalf("the source still holds %s", name)
		}
	}
}

// A move is aborted: the source keeps the partition under its epoch, the destination
// drops its copy; a second abort finds no move.
func TestMoveAborted(t *testing.T) {
	c, ownerOf := routedCluster(t)
	src := ownerOf[1]
	dst := (src + 1) % 3
	c.cut[uint64(src+1)] = false
	c.drop = func(from, to uint64, body []byte) bool { return len(body) > 1 && body[1] == 20 } // no fetch answers
	if mv := moveOf(c, dst, 1, uint64(dst+1)); mv.Err != nil {
		t.Fatalf("move: %v", mv.Err)
	}
	c.advance(2_000_000_000)
	if ms := c.nodes[0].Moves(); len(ms) != 1 || ms[0].State != "copying" {
		t.Fatalf("moves %+v", ms)
	}
	if r := c.do(0, func(nd *node.Node, now int64, tok uint64) { nd.AbortMove(now, tok, "r", 1) }); r.Err != nil {
		t.Fatalf("abort: %v", r.Err)
	}
	c.drop = nil
	c.advance(2_000_000_000)
	if r := c.do(0, func(nd *node.Node, now int64, tok uint64) { nd.AbortMove(now, tok, "r", 1) }); !errors.Is(r.Err, node.ErrMoveNotFound) {
		t.Fatalf("second abort: %v", r.Err)
	}
	id := topicIDOf(t, c, "r")
	if owner, _ := c.nodes[dst].PartitionOwner(id, 1); owner != uint64(src+1) || c.nodes[dst].PartitionEpoch(id, 1) != 0 {
		t.Fatalf("after the abort: owner %d epoch %d", owner, c.nodes[dst].PartitionEpoch(id, 1))
	}
	if st := c.nodes[dst].MoveStats(); st.Dropped != 1 {
		t.Fatalf("destination stats %+v", st)
	}
	if got := replayAll(c, dst, 1, 0); len(got) != 1 {
		t.Fatalf("replay after the abort: %v", got)
	}
}

// A frozen source refuses every ack (retried): a settle since the ack state went to the
// destination, an extend or a release since the lease may be the destination's. The
// destination's fetches are lost once the source is frozen, so that the move stays
// frozen.
func TestFrozenSourceRefusesAcks(t *testing.T) {
	c, ownerOf := routedCluster(t)
	src := ownerOf[0]
	dst := (src + 1) % 3
	for i := range 4 {
		produceTo(t, c, src, 0, fmt.Sprintf("m%d", i))
	}
	c.advance(1_000_000_000)
	r := c.do(src, func(nd *node.Node, now int64, tok uint64) {
		nd.Consume(now, tok, node.ConsumeRequest{Topic: "r", Partition: 0, Max: 3})
	})
	if r.Err != nil || len(r.Messages) != 3 {
		t.Fatalf("consume: %v %d", r.Err, len(r.Messages))
	}
	frozen := func() bool {
		mv := c.nodes[src].Moves()
		return len(mv) == 1 && mv[0].State == "frozen"
	}
	c.drop = func(from, _ uint64, body []byte) bool {
		return from == uint64(dst+1) && len(body) > 1 && body[1] == 19 && frozen() // a FetchRequest
	}
	if mv := moveOf(c, dst, 0, uint64(dst+1)); mv.Err != nil {
		t.Fatalf("move: %v", mv.Err)
	}
	for i := 0; i < 5000 && !frozen(); i++ {
		c.advance(1_000_000)
	}
	if !frozen() {
		t.Fatalf("the move never froze: %+v", c.nodes[src].Moves())
	}
	ack := func(i int, mode node.AckMode) node.Response {
		return c.do(src, func(nd *node.Node, now int64, tok uint64) {
			nd.Ack(now, tok, "r", []string{r.Messages[i].ReceiptHandle}, mode)
		})
	}
	for i, mode := range []node.AckMode{node.AckSettle, node.AckExtend, node.AckRelease} {
		if a := ack(i, mode); !errors.Is(a.Err, node.ErrNotReady) {
			t.Fatalf("an ack (mode %d) at the frozen source: %+v, want ErrNotReady", mode, a)
		}
	}
	if !frozen() {
		t.Fatalf("the move ended while the destination's fetches were lost: %+v", c.nodes[src].Moves())
	}
}
