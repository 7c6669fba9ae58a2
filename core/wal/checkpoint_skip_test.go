package wal_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/sim"
)

// A checkpoint file written before format 2 (one format 1 slot) still recovers: its
// checkpoint holds, and with no skip-set everything above it is replayed.
func TestRecoveryR2OldFormatCheckpoint(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{})
	writeSegment(t, d, 1, "a", "b", "c")
	must(t, d.Create("wal/checkpoint"))
	must(t, d.WriteAt("wal/checkpoint", 0, wal.EncodeCheckpointFile(2)))
	must(t, d.Sync("wal/checkpoint"))
	must(t, d.SyncDir("wal"))
	h := newHarness(t, wal.Config{}, d)
	r := h.recovered
	if !hasDecision(r, "R2") || r.Checkpoint != 2 || payloads(r) != "b,c" || !r.Skip.Equal(wal.Skip{}) {
		t.Fatalf("decisions %v ckpt %d records %s skip %+v", r.Decisions, r.Checkpoint, payloads(r), r.Skip)
	}
	// The next checkpoint write is format 2 in the other slot; the old slot stays readable
	// until then, so a crash in between loses nothing.
	h.l.SetSkip(h.now, wal.Skip{Below: 4, Pending: []wal.SkipPending{{Incarnation: 9, Partition: 1, From: 3}}})
	h.advance()
	h.crash()
	if r := h.recovered; r.Checkpoint != 2 || r.Skip.Below != 4 || len(r.Skip.Pending) != 1 {
		t.Fatalf("after a format 2 write: ckpt %d skip %+v", r.Checkpoint, r.Skip)
	}
}

// The skip-set is made durable with the checkpoint, lazily, and recovered as written.
func TestSkipDurableWithCheckpoint(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	for i := 0; i < 5; i++ {
		h.append("t", []byte{'a' + byte(i)})
		h.completeAll()
	}
	skip := wal.Skip{Below: 6, Pending: []wal.SkipPending{{Incarnation: 9, Partition: 1, From: 2}}}
	h.l.SetCheckpoint(h.now, 2)
	h.l.SetSkip(h.now, skip)
	if h.l.CheckpointFlushed() {
		t.Fatalf("flushed before the lazy write")
	}
	at, ok := h.l.NextDeadline()
	if !ok || at != wal.DefaultCheckpointSyncIntervalNs {
		t.Fatalf("checkpoint deadline %d %v", at, ok)
	}
	h.advance()
	if !h.l.CheckpointFlushed() {
		t.Fatalf("skip not flushed at its deadline")
	}
	h.crash()
	if r := h.recovered; r.Checkpoint != 2 || !r.Skip.Equal(skip) || r.NextSeq != 6 {
		t.Fatalf("recovered ckpt %d skip %+v next %d", r.Checkpoint, r.Skip, r.NextSeq)
	}
	// A skip that does not change writes nothing.
	h.l.SetSkip(h.now, skip)
	if _, ok := h.l.NextDeadline(); ok {
		t.Fatalf("an unchanged skip set a deadline")
	}
}

// SetSkip refuses to call a record done that is not durable yet: a programmer error.
func TestSkipPastDurablePanics(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	h.append("t", []byte("a"))
	defer func() {
		if recover() == nil {
			t.Fatalf("a skip past the durable records was taken")
		}
	}()
	h.l.SetSkip(h.now, wal.Skip{Below: 2})
}

// TestSkipStateMachine: whatever the crashes, the recovered skip-set is one that was set
// (or none), the next seq never reuses a seq it calls done, and after a flush the newest
// one is recovered exactly.
func TestSkipStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{
			CrashKeepProb: rapid.Float64Range(0, 1).Draw(rt, "keep"),
			CrashTearProb: rapid.Float64Range(0, 0.5).Draw(rt, "tear"), CrashGarbageProb: 0.5,
		})
		cfg := wal.Config{SegmentRotateBytes: 300, SegmentBytesMax: 1200, CheckpointSyncIntervalNs: 1000}
		h := newHarness(rt, cfg, d)
		set := []wal.Skip{{}}
		rt.Repeat(map[string]func(*rapid.T){
			"append": func(t *rapid.T) {
				h.append("t", rapid.SliceOfN(rapid.Byte(), 1, 50).Draw(t, "payload"))
				h.completeAll()
			},
			"skip": func(t *rapid.T) {
				s := drawSkip(t, h.l.DurableCheckpoint(), h.l.NextSeq())
				h.l.SetSkip(h.now, s)
				set = append(set, s)
			},
			"tick": func(*rapid.T) { h.now += 500; h.l.Tick(h.now); h.pump(); h.completeAll() },
			"crash": func(t *rapid.T) {
				flush := rapid.Bool().Draw(t, "flush")
				if flush {
					h.now++ // (a flush deadline of 0 would read as none pending)
					h.l.FlushCheckpoint(h.now)
					h.pump()
					h.completeAll()
				}
				h.crash()
				r := h.recovered
				if r == nil {
					t.Fatalf("recovery failed: %v", h.failed)
				}
				if r.NextSeq < r.Skip.Below {
					t.Fatalf("next seq %d would reuse seqs the skip calls done (below %d)", r.NextSeq, r.Skip.Below)
				}
				if flush && !r.Skip.Equal(set[len(set)-1]) {
					t.Fatalf("flushed skip %+v recovered as %+v", set[len(set)-1], r.Skip)
				}
				for _, s := range set {
					if s.Equal(r.Skip) {
						set = []wal.Skip{r.Skip}
						return
					}
				}
				t.Fatalf("recovered a skip never set: %+v", r.Skip)
			},
		})
	})
}

// drawSkip draws a valid Skip over seqs [lo, next): pending partitions of incarnation 9.
func drawSkip(t *rapid.T, lo, next uint64) wal.Skip {
	lo = max(lo, 1)
	if next <= lo {
		return wal.Skip{}
	}
	s := wal.Skip{Below: rapid.Uint64Range(lo, next).Draw(t, "below")}
	n := rapid.IntRange(0, wal.CheckpointPendingMax).Draw(t, "n")
	for p := range n {
		if s.Below <= lo {
			break
		}
		s.Pending = append(s.Pending, wal.SkipPending{Incarnation: 9, Partition: uint32(p),
			From: rapid.Uint64Range(lo, s.Below-1).Draw(t, "from")})
	}
	return s
}
