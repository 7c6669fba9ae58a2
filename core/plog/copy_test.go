package plog_test

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

const copyDir = "parts/000000000000002a-4"

// copyRun reads src from offset from, batch by batch (skipping holes with NextHeld), and
// returns up to batchesMax batches as CommitCopy takes them, with the offset after them.
func copyRun(src *harness, from uint64, batchesMax int) ([]plog.CopyBatch, uint64) {
	var out []plog.CopyBatch
	next := src.l.NextHeld(from)
	for len(out) < batchesMax && next < src.l.HighWatermark() {
		r := src.readNow(next, plog.EntriesMax)
		if r.Err != nil || len(r.Records) == 0 {
			src.t.Fatalf("copy read at %d: %+v", next, r)
		}
		if len(out) > 0 && r.Records[0].Offset != next {
			break
		}
		if len(out) > 0 && out[len(out)-1].Base+uint64(len(out[len(out)-1].Entries)) != next {
			break // a hole: the next CommitCopy starts past it
		}
		b := plog.CopyBatch{Base: next, CommitMs: r.Records[0].CommitTimeMs}
		for _, s := range r.Records {
			b.Entries = append(b.Entries, plog.Entry{Key: s.Key, HasKey: s.HasKey, Payload: s.Payload})
		}
		out = append(out, b)
		next = src.l.NextHeld(next + uint64(len(b.Entries)))
	}
	return out, next
}

// commitCopyNow commits batches on h and completes everything.
func (h *harness) commitCopyNow(batches []plog.CopyBatch) plog.CommitDone {
	h.token++
	tok := h.token
	h.l.CommitCopy(h.now, tok, batches)
	h.pump()
	h.completeAll()
	c, ok := h.commits[tok]
	if !ok {
		h.t.Fatalf("copy commit %d not answered", tok)
	}
	return c
}

// sameRecords fails unless dst serves every offset of src in [from, hw) the same way:
// the same record and commit time, or the same error.
func sameRecords(t fataler, src, dst *harness, from uint64) {
	if src.l.HighWatermark() != dst.l.HighWatermark() {
		t.Fatalf("high-watermarks %d and %d", src.l.HighWatermark(), dst.l.HighWatermark())
	}
	for off := from; off < src.l.HighWatermark(); off++ {
		a, b := src.readNow(off, 1), dst.readNow(off, 1)
		if (a.Err == nil) != (b.Err == nil) || fmt.Sprint(a.Records) != fmt.Sprint(b.Records) {
			t.Fatalf("offset %d: source %+v, copy %+v", off, a, b)
		}
	}
}

func TestCommitCopyKeepsOffsetsAndCommitTimes(t *testing.T) {
	src := newHarness(t, plog.Config{SegmentBytesMax: 200}, nil)
	for i := range 12 {
		src.now += 1_000_000_000
		src.commitNow(fmt.Sprintf("a%d", i), fmt.Sprintf("kb%d", i))
	}
	dst := newHarness(t, plog.Config{Dir: copyDir, BaseOffset: 0}, nil)
	for from := uint64(0); from < src.l.HighWatermark(); {
		var run []plog.CopyBatch
		run, from = copyRun(src, from, 3)
		if c := dst.commitCopyNow(run); c.Err != nil || c.BaseOffset != run[0].Base {
			t.Fatalf("copy commit %+v", c)
		}
	}
	sameRecords(t, src, dst, 0)
	dst.crash()
	sameRecords(t, src, dst, 0)
	if c := dst.commitNow("after"); c.Err != nil || c.BaseOffset != 24 {
		t.Fatalf("a commit after the copy: %+v", c)
	}
}

func TestCommitCopyGapIsAHole(t *testing.T) {
	dst := newHarness(t, plog.Config{Dir: copyDir}, nil)
	one := func(base uint64, p string) plog.CopyBatch {
		return plog.CopyBatch{Base: base, CommitMs: 7, Entries: entries(p)}
	}
	if c := dst.commitCopyNow([]plog.CopyBatch{one(5, "x")}); c.Err != nil {
		t.Fatal(c.Err)
	}
	if dst.l.OldestOffset() != 5 || dst.l.HighWatermark() != 6 {
		t.Fatalf("oldest %d hw %d, want 5 and 6", dst.l.OldestOffset(), dst.l.HighWatermark())
	}
	if c := dst.commitCopyNow([]plog.CopyBatch{one(9, "y"), one(10, "z")}); c.Err != nil ||
		c.Count != 2 {
		t.Fatalf("%+v", c)
	}
	check := func() {
		if r := dst.readNow(7, 1); !errors.Is(r.Err, plog.ErrCorrupt) {
			t.Fatalf("an offset of the gap: %+v", r)
		}
		if got := payloadsOf(dst.readNow(9, 5).Records); got != "9=y" {
			t.Fatalf("read 9: %s", got)
		}
		if dst.l.NextHeld(6) != 9 || dst.l.NextHeld(0) != 5 || dst.l.NextHeld(11) != 11 {
			t.Fatalf("NextHeld %d %d %d", dst.l.NextHeld(6), dst.l.NextHeld(0), dst.l.NextHeld(11))
		}
	}
	check()
	dst.crash()
	if dst.l.OldestOffset() != 5 || dst.l.HighWatermark() != 11 {
		t.Fatalf("recovered oldest %d hw %d", dst.l.OldestOffset(), dst.l.HighWatermark())
	}
	check()
}

func TestCommitCopyRefusals(t *testing.T) {
	dst := newHarness(t, plog.Config{Dir: copyDir}, nil)
	dst.commitNow("a", "b")
	bad := [][]plog.CopyBatch{
		nil,
		{{Base: 1, Entries: entries("x")}}, // below the high-watermark
		{{Base: 2, Entries: entries("x")}, {Base: 4, Entries: entries("y")}}, // not contiguous
		{{Base: 2}}, // an empty batch
	}
	for i, b := range bad {
		if c := dst.commitCopyNow(b); c.Err == nil {
			t.Fatalf("case %d accepted: %+v", i, c)
		}
	}
	if dst.l.HighWatermark() != 2 || len(dst.pending) != 0 {
		t.Fatalf("a refused copy changed the log: hw %d", dst.l.HighWatermark())
	}
}

func TestCommitCopyCorruptWriteIsRetried(t *testing.T) {
	d := sim.NewDisk(rng.New(3), sim.DiskConfig{WriteCorruptProb: 1})
	d.SetFaults(false)
	dst := newHarness(t, plog.Config{Dir: copyDir, PreallocBytes: -1}, d) // corrupt the frame
	run := []plog.CopyBatch{{Base: 0, CommitMs: 1, Entries: entries("a")},
		{Base: 1, CommitMs: 2, Entries: entries("b", "c")}}
	d.SetFaults(true)
	if c := dst.commitCopyNow(run); !errors.Is(c.Err, plog.ErrRetry) || dst.l.HighWatermark() != 0 {
		t.Fatalf("a corrupted copy write: %+v, hw %d", c, dst.l.HighWatermark())
	}
	d.SetFaults(false)
	if c := dst.commitCopyNow(run); c.Err != nil || c.Count != 3 {
		t.Fatalf("the retry: %+v", c)
	}
	dst.crash()
	if got := payloadsOf(dst.readNow(1, 5).Records); got != "1=b,2=c" {
		t.Fatalf("after a crash: %s", got)
	}
}

// TestCopyMatchesSourceUnderFaults copies a log written by random commits (random
// commit times, segment sizes) into another, in random chunks, on a disk that corrupts
// writes and crashes the copy's process between commits; the copy resumes from its own
// high-watermark, and ends serving every offset as the source does.
func TestCopyMatchesSourceUnderFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		src := newHarness(rt, plog.Config{SegmentBytesMax: rapid.Int64Range(100, 800).Draw(rt, "seg")}, nil)
		for i := range rapid.IntRange(1, 30).Draw(rt, "commits") {
			src.now += rapid.Int64Range(0, 3e9).Draw(rt, "gap")
			ps := make([]string, rapid.IntRange(1, 4).Draw(rt, "size"))
			for j := range ps {
				ps[j] = fmt.Sprintf("k%d-%d", i, j)
			}
			src.commitNow(ps...)
		}
		d := sim.NewDisk(rng.New(rapid.Uint64().Draw(rt, "seed")), sim.DiskConfig{
			WriteCorruptProb: rapid.Float64Range(0, 0.3).Draw(rt, "corrupt"),
			CrashKeepProb:    rapid.Float64Range(0, 1).Draw(rt, "keep"),
		})
		dst := newHarness(rt, plog.Config{Dir: copyDir,
			SegmentBytesMax: rapid.Int64Range(100, 800).Draw(rt, "dseg")}, d)
		for steps := 0; dst.l.HighWatermark() < src.l.HighWatermark(); steps++ {
			if steps > 1000 {
				rt.Fatalf("the copy makes no progress at %d", dst.l.HighWatermark())
			}
			run, _ := copyRun(src, dst.l.HighWatermark(), rapid.IntRange(1, 5).Draw(rt, "chunk"))
			if c := dst.commitCopyNow(run); c.Err != nil && !errors.Is(c.Err, plog.ErrRetry) {
				rt.Fatalf("copy commit: %v", c.Err)
			}
			if rapid.IntRange(0, 4).Draw(rt, "crash") == 0 {
				dst.crash()
			}
		}
		d.SetFaults(false)
		dst.crash()
		sameRecords(rt, src, dst, 0)
	})
}
