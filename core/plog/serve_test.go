package plog_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

func TestReadsNeverPastHighWatermark(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow("a")
	tok := h.commit("b", "c")
	h.completeKind(disk.KindWriteAt, nil) // b and c are in the file, not yet synced
	for _, off := range []uint64{1, 2, 100} {
		r := h.reads[h.read(off, 10)]
		if len(r.Records) != 0 || r.Err != nil {
			t.Fatalf("offset %d at or past the high-watermark: %+v", off, r)
		}
	}
	if got := payloadsOf(h.readNow(0, 10).Records); got != "0=a" {
		t.Fatalf("a read below the high-watermark stops at its batch: %s", got)
	}
	h.completeAll()
	if h.commits[tok].Err != nil {
		t.Fatal(h.commits[tok].Err)
	}
	if got := payloadsOf(h.readNow(1, 10).Records); got != "1=b,2=c" {
		t.Fatalf("%s", got)
	}
}

func TestReadWithinOneBatch(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow("a", "b", "c", "d", "e")
	h.commitNow("f")
	cases := []struct {
		off  uint64
		max  int
		want string
	}{
		{1, 2, "1=b,2=c"}, {3, 10, "3=d,4=e"}, {0, 1, "0=a"}, {5, 3, "5=f"}, {2, 0, ""}, {6, 1, ""},
	}
	for _, c := range cases {
		r := h.readNow(c.off, c.max)
		if got := payloadsOf(r.Records); got != c.want || r.Err != nil {
			t.Fatalf("read(%d, %d) = %q %v, want %q", c.off, c.max, got, r.Err, c.want)
		}
	}
	if n := h.d.Stats().Ops[disk.KindReadAt]; n == 0 {
		t.Fatalf("reads should go to the disk")
	}
}

// Reads of several batches and a commit are in flight together and complete in reverse
// order; each read gets exactly its own records.
func TestReadsConcurrentWithCommit(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	for i := 0; i < 4; i++ {
		h.commitNow(fmt.Sprintf("p%d", i))
	}
	var toks []uint64
	for off := uint64(0); off < 4; off++ {
		toks = append(toks, h.read(off, 1))
	}
	ctok := h.commit("q")
	for len(h.pending) > 0 {
		h.complete(len(h.pending)-1, nil)
	}
	for i, tok := range toks {
		if got := payloadsOf(h.reads[tok].Records); got != fmt.Sprintf("%d=p%d", i, i) {
			t.Fatalf("read %d: %s", i, got)
		}
	}
	if c := h.commits[ctok]; c.Err != nil || c.BaseOffset != 4 {
		t.Fatalf("%+v", c)
	}
}

// With ReadCorruptProb 0.3 (and read errors), every answer is the exact bytes or an
// error: a flipped bit never reaches a caller, and never enters the read cache. The cache
// holds one batch and starts empty (a restart), so most reads go to the disk.
func TestReadCorruptionNeverReachesCaller(t *testing.T) {
	var served, refused int
	for seed := uint64(1); seed <= 10; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{ReadCorruptProb: 0.3, ReadErrorProb: 0.1})
		d.SetFaults(false)
		h := newHarness(t, plog.Config{ReadCacheBatchesMax: 1}, d)
		want := map[uint64]string{}
		for i := 0; i < 20; i++ {
			p := fmt.Sprintf("payload-%d-%d", seed, i)
			c := h.commitNow(p, p+"x")
			want[c.BaseOffset], want[c.BaseOffset+1] = p, p+"x"
		}
		h.open()
		d.SetFaults(true)
		for n := 0; n < 200; n++ {
			off := uint64(n % 40)
			r := h.readNow(off, 2)
			if r.Err != nil {
				if !errors.Is(r.Err, plog.ErrCorrupt) {
					t.Fatalf("seed %d: %v", seed, r.Err)
				}
				refused++
				continue
			}
			for _, rec := range r.Records {
				if string(rec.Payload) != want[rec.Offset] {
					t.Fatalf("seed %d: offset %d served %q, want %q", seed, rec.Offset, rec.Payload, want[rec.Offset])
				}
			}
			served++
		}
		if st := h.l.Stats(); st.ReadRetries == 0 || st.ReadCacheHits == 0 || st.ReadCacheMisses < 50 {
			t.Fatalf("seed %d: with corrupted reads, want re-reads, hits and misses: %+v", seed, st)
		}
	}
	if refused > served/100 {
		t.Fatalf("%d refused, %d served: re-reads should almost always find clean bytes", refused, served)
	}
}

func TestPersistentReadCorruptionIsErrCorrupt(t *testing.T) {
	d := sim.NewDisk(rng.New(7), sim.DiskConfig{ReadCorruptProb: 1})
	d.SetFaults(false)
	h := newHarness(t, plog.Config{ReadRetriesMax: 3}, d)
	h.commitNow("a")
	h.open() // a restart: the read cache starts empty
	d.SetFaults(true)
	before := d.Stats().Ops[disk.KindReadAt]
	r := h.readNow(0, 1)
	if !errors.Is(r.Err, plog.ErrCorrupt) || len(r.Records) != 0 {
		t.Fatalf("%+v", r)
	}
	if n := d.Stats().Ops[disk.KindReadAt] - before; n != 4 {
		t.Fatalf("%d reads, want 1 + ReadRetriesMax", n)
	}
}

// The bound counts reads waiting for the disk, even when they share one fetch.
func TestReadsInFlightAreBounded(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow("a")
	h.open() // a restart: the read cache starts empty
	for i := 0; i < plog.ReadsInFlightMax; i++ {
		h.read(0, 1)
	}
	r := h.reads[h.read(0, 1)]
	if !errors.Is(r.Err, plog.ErrBusy) || len(h.pending) != 1 {
		t.Fatalf("%+v, pending %d", r, len(h.pending))
	}
	h.completeAll()
	if !bytes.Equal(h.readNow(0, 1).Records[0].Payload, []byte("a")) {
		t.Fatalf("reads work again once the disk answers")
	}
}

const msNs = 1_000_000

// rolling commits: each payload is large enough that every commit fills a segment, so
// commit i lands in segment i.
func rollingHarness(t *testing.T, retentionMs int64) *harness {
	h := newHarness(t, plog.Config{SegmentBytesMax: 64, RetentionMs: retentionMs}, nil)
	for i, p := range []string{"a", "b", "c"} {
		h.now = int64(1000+i*100) * msNs
		if c := h.commitNow(strings.Repeat(p, 60)); c.Err != nil || c.BaseOffset != uint64(i) {
			t.Fatalf("%+v", c)
		}
	}
	return h
}

func TestRetentionRemovesOldSegments(t *testing.T) {
	h := rollingHarness(t, 500)
	at, ok := h.l.NextDeadline()
	if !ok || at != (1000+500+1)*msNs {
		t.Fatalf("deadline %d %v", at, ok)
	}
	h.now = at - 1
	h.l.Tick(h.now)
	h.pump()
	if len(h.pending) != 0 || h.l.OldestOffset() != 0 {
		t.Fatalf("nothing expires before the deadline: %s", h.pendingKinds())
	}
	h.now = 10_000 * msNs // everything is old now; the active segment must stay
	h.trace = nil
	h.l.Tick(h.now)
	h.pump()
	h.completeAll()
	if got := kinds(h.trace); got != "remove,syncdir,remove,syncdir" {
		t.Fatalf("op sequence %s", got)
	}
	if h.l.OldestOffset() != 2 || h.l.HighWatermark() != 3 || h.l.Stats().SegmentsRemoved != 2 {
		t.Fatalf("oldest %d hw %d stats %+v", h.l.OldestOffset(), h.l.HighWatermark(), h.l.Stats())
	}
	if _, ok := h.l.NextDeadline(); ok {
		t.Fatalf("only the active segment is left: no deadline")
	}
	for _, off := range []uint64{0, 1} {
		if r := h.readNow(off, 1); !errors.Is(r.Err, plog.ErrRemoved) {
			t.Fatalf("offset %d: %+v", off, r)
		}
	}
	if r := h.readNow(2, 1); r.Err != nil || string(r.Records[0].Payload[:1]) != "c" {
		t.Fatalf("%+v", r)
	}
	files := h.d.DurableFiles()
	if _, ok := files[segName(0)]; ok {
		t.Fatalf("removed segment still durable")
	}
	if _, ok := files[segName(2)]; !ok {
		t.Fatalf("active segment removed")
	}
	h.crash()
	if h.recovered.OldestOffset != 2 || h.recovered.HighWatermark != 3 {
		t.Fatalf("after a crash: %+v", h.recovered)
	}
}

func TestRetentionReadInFlightOnRemovedSegment(t *testing.T) {
	h := rollingHarness(t, 500)
	h.open()            // a restart: the read cache starts empty
	tok := h.read(0, 1) // issued while the segment exists
	h.now = 1600 * msNs
	h.l.Tick(h.now)
	h.pump()
	h.completeKind(disk.KindRemove, nil)
	h.completeAll()
	if r := h.reads[tok]; !errors.Is(r.Err, plog.ErrRemoved) {
		t.Fatalf("%+v", r)
	}
	if h.l.OldestOffset() != 1 {
		t.Fatalf("only segment 0 expired: oldest %d", h.l.OldestOffset())
	}
}

func TestRetentionOffKeepsEverything(t *testing.T) {
	h := rollingHarness(t, 0)
	if _, ok := h.l.NextDeadline(); ok {
		t.Fatalf("no deadline without retention")
	}
	h.now = 1 << 62
	h.l.Tick(h.now)
	h.pump()
	if len(h.pending) != 0 || h.l.OldestOffset() != 0 || h.l.SizeBytes() == 0 {
		t.Fatalf("pending %s oldest %d", h.pendingKinds(), h.l.OldestOffset())
	}
}

func TestFailedRemovePoisons(t *testing.T) {
	h := rollingHarness(t, 500)
	h.now = 1600 * msNs
	h.l.Tick(h.now)
	h.pump()
	h.completeKind(disk.KindRemove, disk.ErrIO)
	if !errors.Is(h.failed, plog.ErrFailed) {
		t.Fatalf("%v", h.failed)
	}
	if r := h.readNow(2, 1); r.Err != nil || len(r.Records) != 1 {
		t.Fatalf("reads go on: %+v", r)
	}
}
