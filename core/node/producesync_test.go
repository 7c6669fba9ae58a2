package node_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/narad/narad/core/node"
)

// submit hands node i a request without waiting for its answer (see answer).
func (c *cluster) submit(i int, f func(nd *node.Node, now int64, tok uint64)) uint64 {
	c.tok++
	f(c.nodes[i], c.now, c.tok)
	c.settle()
	return c.tok
}

func (c *cluster) answer(tok uint64) (node.Response, bool) {
	r, ok := c.resps[tok]
	return r, ok
}

func produceSync(topic string, msgs ...node.ProduceMessage) func(nd *node.Node, now int64, tok uint64) {
	return func(nd *node.Node, now int64, tok uint64) { nd.ProduceSync(now, tok, topic, msgs) }
}

// keyFor is a key that FNV-1a hashes to partition p of parts.
func keyFor(t *testing.T, p, parts uint32) []byte {
	for i := range 1000 {
		k := []byte(fmt.Sprintf("k%d", i))
		h := fnv.New32a()
		h.Write(k)
		if h.Sum32()%parts == p {
			return k
		}
	}
	t.Fatalf("no key hashes to partition %d", p)
	return nil
}

// drainOn leases every record of partition part on node i, by payload.
func drainOn(c *cluster, i int, part int64) map[string]node.Message {
	got := map[string]node.Message{}
	for {
		r := consumeOn(c, i, part)
		if r.Err != nil || len(r.Messages) == 0 {
			return got
		}
		for _, m := range r.Messages {
			got[string(m.Payload)] = m
		}
	}
}

// The synchronous path commits at the owner before it answers (the record is consumable
// at once, with no time passing), and its partition choice walks past a dead owner's
// partition where the accept path would keep the key's hash.
func TestProduceSyncWalksPastDeadOwners(t *testing.T) {
	c, ownerOf := routedCluster(t)
	victim, producer := ownerOf[0], ownerOf[2]
	c.cut[uint64(victim+1)] = true
	c.advance(8_000_000_000) // the controller marks it dead after 5 s
	key := keyFor(t, 0, 3)
	walBefore := c.nodes[producer].Stats().WAL.RecordsSynced
	r := c.do(producer, produceSync("r", node.ProduceMessage{Key: key, HasKey: true, Partition: -1, Payload: []byte("walked")}))
	if r.Err != nil || r.Accepted != 1 {
		t.Fatalf("sync produce: %+v", r)
	}
	m, ok := drainOn(c, ownerOf[1], 1)["walked"]
	if !ok {
		t.Fatalf("the record of the dead owner's partition 0 should be committed on partition 1, the next live one")
	}
	if !m.HasKey || !bytes.Equal(m.Key, key) {
		t.Fatalf("the committed record lost its key: %+v", m)
	}
	if st := c.nodes[producer].Stats(); st.Dispatch.Rerouted != 0 || st.WAL.RecordsSynced != walBefore {
		t.Fatalf("the synchronous path went through the WAL or the dispatcher: %+v", st)
	}
}

// A synchronous produce spread over every owner answers once each owner committed its
// share; the records are all consumable right then.
func TestProduceSyncCommitsAtEveryOwner(t *testing.T) {
	c, ownerOf := routedCluster(t)
	var msgs []node.ProduceMessage
	for i := range 6 {
		msgs = append(msgs, node.ProduceMessage{Partition: -1, Payload: []byte(fmt.Sprintf("s%d", i))})
	}
	r := c.do(0, produceSync("r", msgs...))
	if r.Err != nil || r.Accepted != 6 {
		t.Fatalf("sync produce: %+v", r)
	}
	found := map[string]int{}
	for p := int64(0); p < 3; p++ {
		n := 0
		for body := range drainOn(c, ownerOf[p], p) {
			if body[0] == 's' {
				found[body]++
				n++
			}
		}
		if n != 2 { // round-robin
			t.Errorf("partition %d has %d of the records, want 2", p, n)
		}
	}
	for i := range 6 {
		if body := fmt.Sprintf("s%d", i); found[body] != 1 {
			t.Errorf("%s found %d times, want once", body, found[body])
		}
	}
}

// A commit to an owner that never answers ends in ErrNotCommitted after the commit
// timeout (not a definite refusal: the owner may have stored it); meanwhile the
// synchronous produces in flight are bounded (ErrBusy).
func TestProduceSyncTimesOutAndIsBounded(t *testing.T) {
	c, ownerOf := routedCluster(t)
	victim, producer := ownerOf[0], ownerOf[1]
	c.cut[uint64(victim+1)] = true // not dead yet: a pin would go there anyway
	pinned := produceSync("r", node.ProduceMessage{Partition: 0, Payload: []byte("lost?")})
	var toks []uint64
	for range node.ProduceSyncInFlightMax {
		toks = append(toks, c.submit(producer, pinned))
	}
	if r := c.do(producer, pinned); !errors.Is(r.Err, node.ErrBusy) {
		t.Fatalf("produce %d in flight: %v, want ErrBusy", node.ProduceSyncInFlightMax+1, r.Err)
	}
	c.advance(29_000_000_000)
	if r, ok := c.answer(toks[0]); ok {
		t.Fatalf("answered before the commit timeout: %+v", r)
	}
	c.advance(2_000_000_000)
	for _, tok := range toks {
		r, ok := c.answer(tok)
		if !ok || !errors.Is(r.Err, node.ErrNotCommitted) || node.Refused(r.Err) || r.Accepted != 0 {
			t.Fatalf("after the commit timeout: %+v (answered %v)", r, ok)
		}
	}
	if r := c.do(producer, produceSync("r", node.ProduceMessage{Partition: 1, Payload: []byte("ok")})); r.Err != nil {
		t.Fatalf("the bound frees with the answers: %v", r.Err)
	}
}

// A restarted owner's Hello fails the synchronous commits sent to its earlier process at
// once, instead of after the commit timeout; the new process takes the next one.
func TestProduceSyncFailsAtOnceWhenTheOwnerRestarts(t *testing.T) {
	c, ownerOf := routedCluster(t)
	victim, producer := ownerOf[0], ownerOf[1]
	c.cut[uint64(victim+1)] = true
	tok := c.submit(producer, produceSync("r", node.ProduceMessage{Partition: 0, Payload: []byte("to the old process")}))
	sent := c.now
	c.restart(victim)
	delete(c.cut, uint64(victim+1))
	for {
		if r, ok := c.answer(tok); ok {
			if !errors.Is(r.Err, node.ErrNotCommitted) {
				t.Fatalf("answer: %+v", r)
			}
			break
		}
		if c.now-sent > 5_000_000_000 {
			t.Fatalf("no answer 5 s after the owner restarted")
		}
		c.advance(100_000_000)
	}
	c.advance(1_000_000_000)
	c.awaitLeader(10_000_000_000) // a consume needs one; the restart may have cost the leader
	if r := c.do(producer, produceSync("r", node.ProduceMessage{Partition: 0, Payload: []byte("to the new one")})); r.Err != nil || r.Accepted != 1 {
		t.Fatalf("sync produce to the restarted owner: %+v", r)
	}
	if _, ok := drainOn(c, victim, 0)["to the new one"]; !ok {
		t.Fatalf("the restarted owner does not serve the record")
	}
}

// Bad input is refused before anything is committed, with the produce path's errors.
func TestProduceSyncRefusesBadInput(t *testing.T) {
	c, _ := routedCluster(t)
	mib := bytes.Repeat([]byte("x"), 1<<20)
	var tooBig []node.ProduceMessage
	for range node.ProduceSyncBytesMax>>20 + 1 {
		tooBig = append(tooBig, node.ProduceMessage{Partition: -1, Payload: mib})
	}
	cases := []struct {
		name  string
		topic string
		msgs  []node.ProduceMessage
		want  error
	}{
		{"no messages", "r", nil, node.ErrInvalid},
		{"empty payload", "r", []node.ProduceMessage{{Partition: -1, Payload: []byte("a")}, {Partition: -1}}, node.ErrInvalid},
		{"partition out of range", "r", []node.ProduceMessage{{Partition: 3, Payload: []byte("a")}}, node.ErrPartitionRange},
		{"over the byte bound", "r", tooBig, node.ErrInvalid},
		{"unknown topic", "nope", []node.ProduceMessage{{Partition: -1, Payload: []byte("a")}}, node.ErrTopicNotFound},
	}
	before := c.nodes[0].Stats().PartitionCommits + c.nodes[1].Stats().PartitionCommits + c.nodes[2].Stats().PartitionCommits
	for _, tc := range cases {
		r := c.do(0, produceSync(tc.topic, tc.msgs...))
		if !errors.Is(r.Err, tc.want) || !node.Refused(r.Err) {
			t.Errorf("%s: %v, want %v", tc.name, r.Err, tc.want)
		}
	}
	c.advance(1_000_000_000)
	after := c.nodes[0].Stats().PartitionCommits + c.nodes[1].Stats().PartitionCommits + c.nodes[2].Stats().PartitionCommits
	if after != before {
		t.Fatalf("refused produces committed: %d partition commits, were %d", after, before)
	}
}
