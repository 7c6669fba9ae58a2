package node_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/node"
)

func producePinned(h *harness, topic string, part int64, payload string) node.Response {
	msgs := []node.ProduceMessage{{Partition: part, Payload: []byte(payload)}}
	return h.do(func(now int64, tok uint64) { h.n.Produce(now, tok, topic, msgs) })
}

func partitionFailed(t *testing.T, h *harness, topic string, index int) bool {
	t.Helper()
	r := h.do(func(now int64, tok uint64) { h.n.GetTopic(now, tok, topic) })
	if r.Err != nil {
		t.Fatalf("get topic: %v", r.Err)
	}
	return r.Stats[index].Failed
}

// consumeAll takes every message available, acks them, and returns their payloads.
func consumeAll(t *testing.T, h *harness, topic string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for {
		r := consume(h, topic, 100)
		if r.Err != nil {
			t.Fatalf("consume: %v", r.Err)
		}
		if len(r.Messages) == 0 {
			return got
		}
		var handles []string
		for _, m := range r.Messages {
			got[string(m.Payload)] = true
			handles = append(handles, m.ReceiptHandle)
		}
		h.do(func(now int64, tok uint64) { h.n.Ack(now, tok, topic, handles, node.AckSettle) })
	}
}

// A failed fdatasync of one partition's log poisons that partition alone (issue 13,
// point 4): the node does not fail; the other partition takes the failed one's records
// (the dispatcher's reroute) and serves; a produce pinned to it is refused
// (ErrPartitionFailed); GetTopic and Stats show it; it is reopened from its durable image
// after PartitionReopenNs, serves its verified prefix again and takes commits; nothing
// acknowledged is lost.
func TestFailedPartitionStaysLocalAndReopens(t *testing.T) {
	h := newHarness(t, nil)
	tp := createTopic(t, h, "orders", 2)
	if r := producePinned(h, "orders", 0, "before"); r.Err != nil {
		t.Fatal(r.Err)
	}
	dir0 := fmt.Sprintf("parts/%016x-0/", tp.ID)
	h.failOp = func(op disk.Op) bool { return op.Kind == disk.KindSync && strings.HasPrefix(op.Name, dir0) }
	if r := producePinned(h, "orders", 0, "during-1"); r.Err != nil {
		t.Fatal(r.Err) // the WAL took it: the commit fails later
	}
	if h.fail != nil {
		t.Fatalf("the node failed: %v", h.fail)
	}
	if !partitionFailed(t, h, "orders", 0) || partitionFailed(t, h, "orders", 1) {
		t.Fatal("partition 0 should show failed, partition 1 not")
	}
	if st := h.n.Stats(); st.PartitionsFailed != 1 || st.PartitionFailures != 1 {
		t.Fatalf("stats: %d failed, %d failures; want 1, 1", st.PartitionsFailed, st.PartitionFailures)
	}
	if r := producePinned(h, "orders", 0, "refused"); !errors.Is(r.Err, node.ErrPartitionFailed) || !node.Refused(r.Err) {
		t.Fatalf("a produce pinned to the failed partition: %v; want ErrPartitionFailed", r.Err)
	}
	produce(t, h, "orders", "during-2", "during-3") // round robin: one lands on 0, rerouted
	got := consumeAll(t, h, "orders")
	for _, want := range []string{"before", "during-1", "during-2", "during-3"} {
		if !got[want] {
			t.Fatalf("while partition 0 failed: got %v, want %s (read from its verified prefix or rerouted)", got, want)
		}
	}
	h.failOp = nil
	h.advance(node.PartitionReopenNs + 100_000_000)
	if partitionFailed(t, h, "orders", 0) || h.n.Stats().PartitionReopens != 1 {
		t.Fatalf("partition 0 not reopened: stats %+v", h.n.Stats())
	}
	if r := producePinned(h, "orders", 0, "after"); r.Err != nil {
		t.Fatal(r.Err)
	}
	got = consumeAll(t, h, "orders")
	if !got["after"] || got["refused"] {
		t.Fatalf("after the reopen: %v; want after (and never refused)", got)
	}
	if h.fail != nil {
		t.Fatalf("the node failed: %v", h.fail)
	}
}

// A failed write of one partition's ack files poisons that partition alone too: the
// ack is answered (it holds in memory), the partition shows failed, the node goes on,
// and the reopen recovers the partition from its files; the acked record may come back
// (its ack was never written), nothing else is lost.
func TestFailedAckFilesPoisonThePartitionAlone(t *testing.T) {
	h := newHarness(t, nil)
	tp := createTopic(t, h, "orders", 2)
	for _, p := range []string{"a", "b"} {
		if r := producePinned(h, "orders", 0, p); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	acks0 := fmt.Sprintf("acks/%016x-0/", tp.ID)
	h.failOp = func(op disk.Op) bool { return strings.HasPrefix(op.Name, acks0) && op.Kind != disk.KindList }
	r := consume(h, "orders", 1)
	if r.Err != nil || len(r.Messages) != 1 {
		t.Fatalf("consume: %+v", r)
	}
	ack := h.do(func(now int64, tok uint64) {
		h.n.Ack(now, tok, "orders", []string{r.Messages[0].ReceiptHandle}, node.AckSettle)
	})
	if ack.Err != nil || ack.Results[0] != nil {
		t.Fatalf("ack: %+v", ack)
	}
	h.advance(100_000_000) // the ack flush fails
	if h.fail != nil || !partitionFailed(t, h, "orders", 0) {
		t.Fatalf("node failed %v; partition 0 should show failed", h.fail)
	}
	h.failOp = nil
	h.advance(node.PartitionReopenNs + 100_000_000)
	if partitionFailed(t, h, "orders", 0) || h.n.Stats().PartitionReopens != 1 {
		t.Fatalf("partition 0 not reopened: %+v", h.n.Stats())
	}
	got := consumeAll(t, h, "orders")
	if !got["b"] {
		t.Fatalf("after the reopen: %v; want b", got)
	}
}
