package node_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/node"
)

func u32(v uint32) *uint32 { return &v }
func i64(v int64) *int64   { return &v }

func createTopic(t *testing.T, h *harness, name string, parts uint32) node.Topic {
	t.Helper()
	r := h.do(func(now int64, tok uint64) {
		h.n.CreateTopic(now, tok, node.TopicSpec{Name: name, Partitions: u32(parts), VisibilityTimeoutMs: i64(1000)})
	})
	if r.Err != nil {
		t.Fatalf("create %s: %v", name, r.Err)
	}
	return r.Topic
}

func produce(t *testing.T, h *harness, topic string, payloads ...string) {
	t.Helper()
	msgs := make([]node.ProduceMessage, len(payloads))
	for i, p := range payloads {
		msgs[i] = node.ProduceMessage{Partition: -1, Payload: []byte(p)}
	}
	r := h.do(func(now int64, tok uint64) { h.n.Produce(now, tok, topic, msgs) })
	if r.Err != nil || r.Accepted != len(payloads) {
		t.Fatalf("produce: %+v", r)
	}
}

func consume(h *harness, topic string, max int) node.Response {
	return h.do(func(now int64, tok uint64) {
		h.n.Consume(now, tok, node.ConsumeRequest{Topic: topic, Partition: -1, Max: max})
	})
}

func TestProduceConsumeAck(t *testing.T) {
	h := newHarness(t, nil)
	createTopic(t, h, "orders", 2)
	produce(t, h, "orders", "a", "b", "c", "d")
	r := consume(h, "orders", 10)
	if r.Err != nil || len(r.Messages) != 4 {
		t.Fatalf("consume: %+v", r)
	}
	got := map[string]string{}
	for _, m := range r.Messages {
		got[string(m.Payload)] = m.ReceiptHandle
	}
	if len(got) != 4 || got["a"] == "" {
		t.Fatalf("messages %v", got)
	}
	if r := consume(h, "orders", 10); r.Err != nil || len(r.Messages) != 0 {
		t.Fatalf("everything is leased: %+v", r)
	}
	ack := h.do(func(now int64, tok uint64) {
		h.n.Ack(now, tok, "orders", []string{got["a"], got["b"], "garbage"}, node.AckSettle)
	})
	if ack.Err != nil || ack.Results[0] != nil || ack.Results[1] != nil || !errors.Is(ack.Results[2], node.ErrBadHandle) {
		t.Fatalf("ack: %+v", ack)
	}
	nack := h.do(func(now int64, tok uint64) { h.n.Ack(now, tok, "orders", []string{got["c"]}, node.AckRelease) })
	if nack.Results[0] != nil {
		t.Fatalf("nack: %+v", nack)
	}
	r = consume(h, "orders", 10)
	if len(r.Messages) != 1 || string(r.Messages[0].Payload) != "c" {
		t.Fatalf("after nack only c is available: %+v", r.Messages)
	}
	h.advance(2_000_000_000) // d's and c's leases expire
	r = consume(h, "orders", 10)
	if len(r.Messages) != 2 {
		t.Fatalf("after expiry c and d come back: %+v", r.Messages)
	}
	again := h.do(func(now int64, tok uint64) { h.n.Ack(now, tok, "orders", []string{got["a"]}, node.AckSettle) })
	if !errors.Is(again.Results[0], node.ErrLeaseGone) {
		t.Fatalf("double ack: %+v", again)
	}
}

func TestAcceptedMessagesSurviveCrashes(t *testing.T) {
	h := newHarness(t, nil)
	createTopic(t, h, "t", 3)
	var want []string
	for i := 0; i < 50; i++ {
		p := fmt.Sprintf("m%d", i)
		produce(t, h, "t", p)
		want = append(want, p)
		if i%17 == 0 {
			h.crash()
		}
	}
	h.crash()
	seen := map[string]bool{}
	for i := 0; i < 100 && len(seen) < len(want); i++ {
		r := consume(h, "t", 100)
		for _, m := range r.Messages {
			seen[string(m.Payload)] = true
		}
	}
	for _, p := range want {
		if !seen[p] {
			t.Fatalf("accepted message %s never delivered (saw %d of %d)", p, len(seen), len(want))
		}
	}
}

func TestErrors(t *testing.T) {
	h := newHarness(t, nil)
	createTopic(t, h, "t", 2)
	if r := h.do(func(now int64, tok uint64) {
		h.n.Produce(now, tok, "nope", []node.ProduceMessage{{Partition: -1, Payload: []byte("x")}})
	}); !errors.Is(r.Err, node.ErrTopicNotFound) {
		t.Fatalf("unknown topic: %v", r.Err)
	}
	if r := h.do(func(now int64, tok uint64) {
		h.n.Produce(now, tok, "t", []node.ProduceMessage{{Partition: 2, Payload: []byte("x")}})
	}); !errors.Is(r.Err, node.ErrPartitionRange) {
		t.Fatalf("partition range: %v", r.Err)
	}
	if r := h.do(func(now int64, tok uint64) { h.n.CreateTopic(now, tok, node.TopicSpec{Name: "t"}) }); !errors.Is(r.Err, node.ErrTopicExists) {
		t.Fatalf("exists: %v", r.Err)
	}
	if r := h.do(func(now int64, tok uint64) {
		h.n.Consume(now, tok, node.ConsumeRequest{Topic: "t", Partition: 0, Max: 1, HasOffset: true, Offset: 5})
	}); r.Err != nil || len(r.Messages) != 0 {
		t.Fatalf("replay past the end: %+v", r)
	}
}

// ackAll consumes every available message of topic and acks it.
func ackAll(t *testing.T, h *harness, topic string) int {
	t.Helper()
	r := consume(h, topic, 100)
	handles := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		handles[i] = m.ReceiptHandle
	}
	a := h.do(func(now int64, tok uint64) { h.n.Ack(now, tok, topic, handles, node.AckSettle) })
	for _, err := range a.Results {
		if err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	return len(handles)
}

func TestFlushPersistsAcksBeforeTheirInterval(t *testing.T) {
	for _, flush := range []bool{false, true} {
		h := newHarness(t, nil)
		createTopic(t, h, "t", 2)
		produce(t, h, "t", "a", "b", "c")
		if n := ackAll(t, h, "t"); n != 3 {
			t.Fatalf("acked %d, want 3", n)
		}
		if h.n.Flushed() {
			t.Fatalf("acks reported durable before any flush")
		}
		if flush {
			h.n.Flush(h.now)
			h.settle()
			if !h.n.Flushed() {
				t.Fatalf("Flush did not make the acks durable")
			}
		}
		h.crash()
		r := consume(h, "t", 100)
		if flush && len(r.Messages) != 0 {
			t.Fatalf("flushed acks redelivered after a crash: %d messages", len(r.Messages))
		}
		// Without a flush the checkpoint is not durable either: the WAL replays the records
		// into the partitions again, so each may come back more than once.
		if !flush && len(r.Messages) < 3 {
			t.Fatalf("unflushed acks: want all 3 redelivered (at-least-once), got %d", len(r.Messages))
		}
	}
}

// settleWhere completes, FIFO, only the pending ops whose file is under prefix.
func (h *harness) settleWhere(prefix string) {
	h.pump()
	for i := 0; ; i++ {
		if i > 100_000 {
			h.t.Fatalf("ops under %s never stop", prefix)
		}
		j := slices.IndexFunc(h.ops, func(op disk.Op) bool { return strings.HasPrefix(op.Name, prefix) })
		if j < 0 {
			return
		}
		op := h.ops[j]
		h.ops = slices.Delete(h.ops, j, j+1)
		h.n.DiskDone(h.now, disk.Apply(h.d, op))
		h.pump()
	}
}

// A consume waiting for its records to be read when the topic is deleted is answered
// (not left waiting for reads that now complete into nothing).
func TestConsumeWaitingForReadsAnsweredWhenTopicDeleted(t *testing.T) {
	h := newHarness(t, nil)
	createTopic(t, h, "t", 1)
	produce(t, h, "t", "a", "b")
	h.crash() // nothing cached: the consume must read from disk
	h.tok++
	consumeTok := h.tok
	h.n.Consume(h.now, consumeTok, node.ConsumeRequest{Topic: "t", Partition: -1, Max: 2})
	h.pump()
	if _, answered := h.resps[consumeTok]; answered {
		t.Fatal("consume answered before its reads completed: the test needs reads in flight")
	}
	h.tok++
	delTok := h.tok
	h.n.DeleteTopic(h.now, delTok, "t")
	h.settleWhere("meta/")
	if r, ok := h.resps[delTok]; !ok || r.Err != nil {
		t.Fatalf("delete: %+v %v", r, ok)
	}
	r, ok := h.resps[consumeTok]
	if !ok {
		t.Fatal("consume still waiting after its topic was deleted")
	}
	if !errors.Is(r.Err, node.ErrTopicNotFound) {
		t.Fatalf("consume answered %v, want ErrTopicNotFound", r.Err)
	}
	h.settle() // the reads complete into nothing
}

// A node with an address joins the members through the log; GET /v1/cluster/members
// shows it alive, leading, and owning the partitions of its topics.
func TestSingleNodeJoinsAndListsItself(t *testing.T) {
	h := newHarnessWith(t, nil, node.Config{NodeID: "n1", Addr: "127.0.0.1:7942", Dispatch: dispatch.Config{LingerNs: -1}})
	h.advance(500_000_000)
	createTopic(t, h, "a", 3)
	createTopic(t, h, "b", 2)
	r := h.do(func(now int64, tok uint64) { h.n.ListMembers(now, tok) })
	want := []node.MemberInfo{{ID: 1, Addr: "127.0.0.1:7942", Alive: true, Leader: true, Voter: true,
		OwnedPartitions: 5}}
	if r.Err != nil || !slices.Equal(r.Members, want) {
		t.Fatalf("members: %+v %v, want %+v", r.Members, r.Err, want)
	}
	h.crash() // the membership is in the log: no second join, same answer
	h.advance(500_000_000)
	r = h.do(func(now int64, tok uint64) { h.n.ListMembers(now, tok) })
	if r.Err != nil || !slices.Equal(r.Members, want) {
		t.Fatalf("members after a crash: %+v %v", r.Members, r.Err)
	}
}
