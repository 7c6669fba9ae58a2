package wal_test

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/sim"
)

// walModel is what the test knows the WAL promised.
type walModel struct {
	h         *harness
	acked     map[uint64][]byte   // seq -> payload of every append answered durable
	appended  map[uint64][][]byte // seq -> every payload ever appended with it
	tokens    map[uint64][]byte   // token -> payload, for appends not yet answered
	ckptFloor uint64              // the durable checkpoint can never be below this
}

// TestWALStateMachine drives the WAL with random appends, completions in any order,
// failed syncs and writes, checkpoint moves, ticks and crashes, and checks after every
// crash that every acknowledged record at or above the checkpoint is recovered, in seq
// order and byte for byte, and that nothing recovered was never appended.
func TestWALStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{
			CrashKeepProb: rapid.Float64Range(0, 1).Draw(rt, "keep"),
			CrashTearProb: rapid.Float64Range(0, 0.5).Draw(rt, "tear"), CrashGarbageProb: 0.5,
		})
		cfg := wal.Config{SegmentRotateBytes: 300, SegmentBytesMax: 1200, CheckpointSyncIntervalNs: 1000}
		m := &walModel{h: newHarness(rt, cfg, d), acked: map[uint64][]byte{}, appended: map[uint64][][]byte{}, tokens: map[uint64][]byte{}}
		rt.Repeat(map[string]func(*rapid.T){
			"append":     m.append,
			"complete":   m.complete,
			"fail":       m.fail,
			"checkpoint": m.checkpoint,
			"tick":       func(*rapid.T) { m.h.now += 500; m.h.l.Tick(m.h.now); m.h.pump(); m.collect() },
			"crash":      m.crash,
		})
	})
}

func (m *walModel) append(t *rapid.T) {
	p := rapid.SliceOfN(rapid.Byte(), 1, 200).Draw(t, "payload")
	seq := m.h.l.NextSeq()
	tok := m.h.append("t", p)
	if m.h.l.NextSeq() == seq+1 { // staged: it may reach the disk from now on
		m.appended[seq] = append(m.appended[seq], p)
	}
	m.tokens[tok] = p
	m.collect()
}

// collect moves answered appends into the model.
func (m *walModel) collect() {
	for tok, d := range m.h.done {
		p, ok := m.tokens[tok]
		if !ok {
			continue
		}
		delete(m.tokens, tok)
		if d.Err == nil {
			m.acked[d.Seq] = p
		}
	}
}

func (m *walModel) complete(t *rapid.T) {
	if len(m.h.pending) == 0 {
		t.Skip("nothing in flight")
	}
	m.h.complete(rapid.IntRange(0, len(m.h.pending)-1).Draw(t, "op"), nil)
	m.collect()
}

func (m *walModel) fail(t *rapid.T) {
	if len(m.h.pending) == 0 {
		t.Skip("nothing in flight")
	}
	i := rapid.IntRange(0, len(m.h.pending)-1).Draw(t, "op")
	if k := m.h.pending[i].Kind; k != disk.KindSync && k != disk.KindWriteAt {
		t.Skip("only writes and syncs are failed here")
	}
	m.h.complete(i, disk.ErrIO)
	m.collect()
	if m.h.failed == nil {
		t.Fatalf("a failed %s must fail the WAL", m.h.pending)
	}
}

func (m *walModel) checkpoint(t *rapid.T) {
	if m.h.failed != nil {
		t.Skip("failed")
	}
	lo := max(m.ckptFloor, m.h.l.DurableCheckpoint())
	hi := m.durableNext()
	if hi < lo {
		t.Skip("nothing to move")
	}
	seq := rapid.Uint64Range(lo, hi).Draw(t, "ckpt")
	m.wanted(seq)
}

// durableNext is the highest seq the checkpoint may reach: one past the acked prefix.
func (m *walModel) durableNext() uint64 {
	n := m.h.l.NextSeq()
	for s := m.h.l.DurableCheckpoint(); s < n; s++ {
		if _, ok := m.acked[s]; !ok {
			return s
		}
	}
	return n
}

func (m *walModel) wanted(seq uint64) {
	defer func() { _ = recover() }() // a move below the in-memory wanted value panics by design
	m.h.l.SetCheckpoint(m.h.now, seq)
	m.h.pump()
}

func (m *walModel) crash(t *rapid.T) {
	floor := m.h.l.DurableCheckpoint()
	for tok := range m.tokens {
		delete(m.tokens, tok) // answers lost with the process
	}
	m.h.crash()
	if m.h.failed != nil {
		t.Fatalf("recovery failed: %v", m.h.failed)
	}
	r := m.h.recovered
	if r.Checkpoint < floor {
		t.Fatalf("durable checkpoint went back from %d to %d", floor, r.Checkpoint)
	}
	m.ckptFloor = r.Checkpoint
	got := map[uint64][]byte{}
	prev := uint64(0)
	for _, rec := range r.Records {
		if rec.Seq <= prev {
			t.Fatalf("recovered seqs out of order: %d after %d", rec.Seq, prev)
		}
		prev = rec.Seq
		if !m.wasAppended(rec.Seq, rec.Payload) {
			t.Fatalf("recovered a record never appended: seq %d", rec.Seq)
		}
		got[rec.Seq] = rec.Payload
	}
	for seq, p := range m.acked {
		if seq < r.Checkpoint {
			continue
		}
		if !bytes.Equal(got[seq], p) {
			t.Fatalf("acked seq %d lost or changed (checkpoint %d, decisions %v)", seq, r.Checkpoint, r.Decisions)
		}
	}
	// Seqs at or above the next seq may be reused by new appends: forget their history.
	for seq := range m.acked {
		if seq >= r.NextSeq {
			panic(fmt.Sprintf("acked seq %d at or above the recovered next seq %d", seq, r.NextSeq))
		}
	}
}

func (m *walModel) wasAppended(seq uint64, p []byte) bool {
	for _, q := range m.appended[seq] {
		if bytes.Equal(p, q) {
			return true
		}
	}
	return false
}
