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

// readAtOnce issues a read and requires it to be answered in the same call without any
// disk op: a read cache hit.
func readAtOnce(t *testing.T, h *harness, off uint64, max int) plog.ReadDone {
	t.Helper()
	before, ops := h.l.Stats().ReadCacheHits, len(h.pending)
	tok := h.read(off, max)
	r, ok := h.reads[tok]
	if !ok || len(h.pending) != ops || h.l.Stats().ReadCacheHits != before+1 {
		t.Fatalf("read(%d, %d) not served from the cache: answered %v, pending %s", off, max, ok, h.pendingKinds())
	}
	return r
}

// readMisses issues a read and requires it to wait for the disk.
func readMisses(t *testing.T, h *harness, off uint64, max int) uint64 {
	t.Helper()
	before := h.l.Stats().ReadCacheMisses
	tok := h.read(off, max)
	if _, ok := h.reads[tok]; ok || h.l.Stats().ReadCacheMisses != before+1 {
		t.Fatalf("read(%d, %d) should miss the cache: %+v", off, max, h.reads[tok])
	}
	return tok
}

func numbered(prefix string, n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return ps
}

// The batch a commit just made visible is served record by record (as the node reads a
// leased batch) with no disk op at all.
func TestReadCacheServesCommittedBatchWithoutDisk(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	ps := numbered("p", 100)
	if c := h.commitNow(ps...); c.Err != nil {
		t.Fatal(c.Err)
	}
	readsBefore := h.d.Stats().Ops[disk.KindReadAt]
	for off := uint64(0); off < 100; off++ {
		r := readAtOnce(t, h, off, 1)
		if got := payloadsOf(r.Records); r.Err != nil || got != fmt.Sprintf("%d=p%d", off, off) {
			t.Fatalf("offset %d: %s %v", off, got, r.Err)
		}
	}
	if got := payloadsOf(readAtOnce(t, h, 97, 10).Records); got != "97=p97,98=p98,99=p99" {
		t.Fatalf("a read stops at its batch: %s", got)
	}
	if n := h.d.Stats().Ops[disk.KindReadAt] - readsBefore; n != 0 {
		t.Fatalf("%d disk reads for a cached batch", n)
	}
	if st := h.l.Stats(); st.ReadCacheHits != 101 || st.ReadCacheMisses != 0 {
		t.Fatalf("%+v", st)
	}
	rec := readAtOnce(t, h, 5, 1).Records[0]
	if rec.CommitTimeMs != h.now/1_000_000 || rec.HasKey || rec.Key != nil {
		t.Fatalf("envelope %+v", rec)
	}
}

// After a restart the cache is empty: the reads of one batch that arrive together share
// one fetch, and once it is back the batch is cached.
func TestReadCacheMissesShareOneFetch(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow(numbered("p", 10)...)
	h.commitNow("q")
	h.open()
	if b, _ := h.l.ReadCacheSize(); b != 0 {
		t.Fatalf("a reopened log starts with %d cached batches", b)
	}
	var toks []uint64
	for off := uint64(0); off < 10; off++ {
		toks = append(toks, readMisses(t, h, off, 1))
	}
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindReadAt {
		t.Fatalf("want one fetch for the batch, pending: %s", h.pendingKinds())
	}
	readMisses(t, h, 10, 1) // another batch: its own fetch
	if len(h.pending) != 2 {
		t.Fatalf("pending: %s", h.pendingKinds())
	}
	h.completeAll()
	for i, tok := range toks {
		if got := payloadsOf(h.reads[tok].Records); got != fmt.Sprintf("%d=p%d", i, i) {
			t.Fatalf("read %d: %s", i, got)
		}
	}
	if st := h.l.Stats(); st.ReadsJoined != 9 || st.ReadCacheMisses != 11 {
		t.Fatalf("%+v", st)
	}
	if got := payloadsOf(readAtOnce(t, h, 8, 5).Records); got != "8=p8,9=p9" {
		t.Fatalf("%s", got)
	}
	if got := payloadsOf(readAtOnce(t, h, 10, 5).Records); got != "10=q" {
		t.Fatalf("%s", got)
	}
}

// Retention drops the cached batches of the segment it removes: their offsets are
// answered ErrRemoved from the moment OldestOffset moves, not served from memory.
func TestReadCacheRetentionRemovesCachedBatches(t *testing.T) {
	h := rollingHarness(t, 500) // offsets 0, 1, 2 in segments of their own, all cached
	for off := uint64(0); off < 3; off++ {
		readAtOnce(t, h, off, 1)
	}
	if b, _ := h.l.ReadCacheSize(); b != 3 {
		t.Fatalf("%d cached batches, want 3", b)
	}
	h.now = 1550 * msNs // segment 0 (newest commit at 1000 ms) expired, segment 1 (1100 ms) not
	h.l.Tick(h.now)
	h.pump()
	// The Remove is still in flight: the offset is gone for readers already.
	if r := h.reads[h.read(0, 1)]; !errors.Is(r.Err, plog.ErrRemoved) {
		t.Fatalf("read of a removed segment's offset: %+v", r)
	}
	if b, _ := h.l.ReadCacheSize(); b != 2 {
		t.Fatalf("%d cached batches after removing one segment, want 2", b)
	}
	h.completeAll()
	if r := h.readNow(0, 1); !errors.Is(r.Err, plog.ErrRemoved) {
		t.Fatalf("%+v", r)
	}
	if got := payloadsOf(readAtOnce(t, h, 1, 1).Records); !strings.HasPrefix(got, "1=b") {
		t.Fatalf("%s", got)
	}
}

// A fetch that was in flight when retention removed its segment, and that read the bytes
// before the file went, is answered ErrRemoved and leaves nothing in the cache.
func TestReadCacheFetchCompletingAfterRetention(t *testing.T) {
	h := rollingHarness(t, 500)
	h.open() // empty cache
	tok := h.read(0, 1)
	h.now = 1550 * msNs
	h.l.Tick(h.now)
	h.pump()
	h.completeKind(disk.KindReadAt, nil) // the file is still there: the read succeeds
	if r := h.reads[tok]; !errors.Is(r.Err, plog.ErrRemoved) {
		t.Fatalf("%+v", r)
	}
	h.completeAll()
	if b, _ := h.l.ReadCacheSize(); b != 0 {
		t.Fatalf("a removed batch was cached")
	}
}

// A commit that fails (a failed write, or a write the device stored wrong) and is retried
// at the same offsets with different entries of the same sizes: reads serve the retried
// entries, from the cache and, after a restart, from the disk.
func TestReadCacheServesRetriedCommitNotFailedOne(t *testing.T) {
	for _, how := range []string{"write error", "silent corruption"} {
		for seed := uint64(1); seed <= 10; seed++ {
			d := sim.NewDisk(rng.New(seed), sim.DiskConfig{WriteCorruptProb: 1})
			d.SetFaults(false)
			h := newHarness(t, plog.Config{}, d)
			h.commitNow("a")
			tok := h.commit("b1", "c1")
			if how == "write error" {
				h.completeKind(disk.KindWriteAt, disk.ErrNoSpace)
			} else {
				d.SetFaults(true)
				h.completeKind(disk.KindWriteAt, nil)
				d.SetFaults(false)
			}
			h.completeAll()
			if c := h.commits[tok]; !errors.Is(c.Err, plog.ErrRetry) {
				t.Fatalf("%s seed %d: %+v", how, seed, c)
			}
			if r := h.readNow(1, 5); len(r.Records) != 0 || r.Err != nil {
				t.Fatalf("%s seed %d: the failed commit is visible: %+v", how, seed, r)
			}
			if c := h.commitNow("b2", "c2"); c.Err != nil || c.BaseOffset != 1 {
				t.Fatalf("%s seed %d: retry %+v", how, seed, c)
			}
			if got := payloadsOf(readAtOnce(t, h, 1, 5).Records); got != "1=b2,2=c2" {
				t.Fatalf("%s seed %d: from the cache: %s", how, seed, got)
			}
			h.open()
			if got := readAll(h, 0, 3); got != "0=a,1=b2,2=c2" {
				t.Fatalf("%s seed %d: from the disk: %s", how, seed, got)
			}
		}
	}
}

// The batch bound: the newest ReadCacheBatchesMax batches stay, the least recently used
// goes, and a hit makes a batch recently used.
func TestReadCacheBatchBoundEvictsLeastRecentlyUsed(t *testing.T) {
	h := newHarness(t, plog.Config{ReadCacheBatchesMax: 3}, nil)
	for _, p := range []string{"a", "b", "c"} {
		h.commitNow(p)
	}
	readAtOnce(t, h, 0, 1) // a is now the most recently used; b the least
	h.commitNow("d")       // evicts b
	if b, _ := h.l.ReadCacheSize(); b != 3 {
		t.Fatalf("%d cached batches, bound 3", b)
	}
	for _, off := range []uint64{0, 2, 3} {
		readAtOnce(t, h, off, 1)
	}
	tok := readMisses(t, h, 1, 1)
	h.completeAll() // b is fetched and cached; a (read least recently) goes
	if got := payloadsOf(h.reads[tok].Records); got != "1=b" {
		t.Fatalf("%s", got)
	}
	readAtOnce(t, h, 1, 1)
	readAtOnce(t, h, 2, 1)
	readMisses(t, h, 0, 1)
	h.completeAll()
}

// The default bounds hold under many commits: never more than DefaultReadCacheBatchesMax
// batches or DefaultReadCacheBytesMax bytes, and the newest batches are the ones kept.
func TestReadCacheDefaultBounds(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	for i := 0; i < plog.DefaultReadCacheBatchesMax+36; i++ {
		h.commitNow(fmt.Sprintf("p%d", i))
		if b, n := h.l.ReadCacheSize(); b > plog.DefaultReadCacheBatchesMax || n > plog.DefaultReadCacheBytesMax {
			t.Fatalf("after %d commits: %d batches, %d bytes", i+1, b, n)
		}
	}
	if b, _ := h.l.ReadCacheSize(); b != plog.DefaultReadCacheBatchesMax {
		t.Fatalf("%d cached batches, want %d", b, plog.DefaultReadCacheBatchesMax)
	}
	readAtOnce(t, h, 36, 1)
	readMisses(t, h, 35, 1)
	h.completeAll()

	// Batches of one 1 MiB payload: the byte bound binds first.
	h = newHarness(t, plog.Config{}, nil)
	big := strings.Repeat("x", plog.PayloadBytesMax)
	for i := 0; i < 12; i++ {
		h.commitNow(big)
		b, n := h.l.ReadCacheSize()
		if n > plog.DefaultReadCacheBytesMax || b > plog.DefaultReadCacheBytesMax/plog.PayloadBytesMax {
			t.Fatalf("after %d commits: %d batches, %d bytes", i+1, b, n)
		}
	}
	if b, _ := h.l.ReadCacheSize(); b != plog.DefaultReadCacheBytesMax/plog.PayloadBytesMax-1 {
		t.Fatalf("%d cached batches of 1 MiB, want %d", b, plog.DefaultReadCacheBytesMax/plog.PayloadBytesMax-1)
	}
	readAtOnce(t, h, 11, 1)
	readMisses(t, h, 4, 1)
	h.completeAll()
}

// A batch larger than the whole byte bound is never cached: every read of it goes to the
// disk, and it does not push out what is cached.
func TestReadCacheSkipsBatchOverByteBound(t *testing.T) {
	h := newHarness(t, plog.Config{ReadCacheBytesMax: 300}, nil)
	h.commitNow("small")
	h.commitNow(strings.Repeat("L", 400))
	if b, n := h.l.ReadCacheSize(); b != 1 || n > 300 {
		t.Fatalf("%d batches, %d bytes", b, n)
	}
	readAtOnce(t, h, 0, 1)
	for range 2 {
		tok := readMisses(t, h, 1, 1)
		h.completeAll()
		if r := h.reads[tok]; r.Err != nil || len(r.Records[0].Payload) != 400 {
			t.Fatalf("%+v", r.Err)
		}
	}
	if b, n := h.l.ReadCacheSize(); b != 1 || n > 300 {
		t.Fatalf("%d batches, %d bytes", b, n)
	}
}

// A fetch that fails its CRC on every read is answered ErrCorrupt to every read that
// waited for it and caches nothing; once the reads are clean the batch is cached.
func TestReadCacheNeverCachesCorruptReads(t *testing.T) {
	d := sim.NewDisk(rng.New(5), sim.DiskConfig{ReadCorruptProb: 1})
	d.SetFaults(false)
	h := newHarness(t, plog.Config{ReadRetriesMax: 2}, d)
	h.commitNow("a", "b")
	h.open()
	d.SetFaults(true)
	t1, t2 := h.read(0, 1), h.read(1, 1)
	h.completeAll()
	for _, tok := range []uint64{t1, t2} {
		if r := h.reads[tok]; !errors.Is(r.Err, plog.ErrCorrupt) {
			t.Fatalf("%+v", r)
		}
	}
	if b, _ := h.l.ReadCacheSize(); b != 0 || h.l.Stats().ReadsCorrupt != 2 {
		t.Fatalf("%d cached, stats %+v", b, h.l.Stats())
	}
	d.SetFaults(false)
	if got := payloadsOf(h.readNow(0, 2).Records); got != "0=a,1=b" {
		t.Fatalf("%s", got)
	}
	readAtOnce(t, h, 1, 1)
}

// Answers are copies: a caller that writes into (or appends to) what it was given cannot
// change what later reads get, from the cache or from a fetch. Empty payloads and empty
// keys are served non-nil.
func TestReadCacheAnswersAreCopies(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	es := []plog.Entry{
		{HasKey: true, Key: []byte("k0"), Payload: []byte("p0")},
		{Payload: []byte("p1")},
		{HasKey: true, Key: []byte{}, Payload: []byte{}},
	}
	h.token++
	h.l.Commit(h.now, h.token, es)
	h.pump()
	h.completeAll()
	scribble := func(r plog.ReadDone) {
		for _, rec := range r.Records {
			for i := range rec.Key {
				rec.Key[i] = '!'
			}
			for i := range rec.Payload {
				rec.Payload[i] = '!'
			}
			_ = append(rec.Payload, "!!!!"...) // must not run into a neighbour
		}
	}
	check := func(r plog.ReadDone, when string) {
		t.Helper()
		if len(r.Records) != 3 || r.Err != nil {
			t.Fatalf("%s: %+v", when, r)
		}
		for i, rec := range r.Records {
			w := es[i]
			if rec.HasKey != w.HasKey || !bytes.Equal(rec.Key, w.Key) || !bytes.Equal(rec.Payload, w.Payload) || rec.Payload == nil {
				t.Fatalf("%s: record %d = %+v, want %+v", when, i, rec, w)
			}
			if w.HasKey && rec.Key == nil {
				t.Fatalf("%s: record %d: an empty key is served nil", when, i)
			}
		}
	}
	r := readAtOnce(t, h, 0, 3)
	check(r, "first hit")
	scribble(r)
	check(readAtOnce(t, h, 0, 3), "hit after the caller wrote into an answer")
	h.open()
	r = h.readNow(0, 3)
	check(r, "fetch")
	scribble(r)
	check(readAtOnce(t, h, 0, 3), "hit after the caller wrote into a fetched answer")
}
