package plog_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/frame"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// stepKind completes the only pending op, which must be of kind k, and checks that the
// commit is still unanswered and invisible.
func stepKind(t *testing.T, h *harness, tok uint64, hw uint64, k disk.Kind) disk.Op {
	t.Helper()
	if len(h.pending) != 1 || h.pending[0].Kind != k {
		t.Fatalf("want exactly one pending %s, have: %s", k, h.pendingKinds())
	}
	if _, ok := h.commits[tok]; ok {
		t.Fatalf("commit answered before its %s", k)
	}
	if h.l.HighWatermark() != hw {
		t.Fatalf("high-watermark moved to %d before the %s", h.l.HighWatermark(), k)
	}
	return h.complete(0, nil)
}

func TestCommitDurableOrder(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.trace = nil
	tok := h.commit("a", "kb")
	stepKind(t, h, tok, 0, disk.KindCreate) // the first segment: entry durable before a write
	stepKind(t, h, tok, 0, disk.KindSyncDir)
	w := stepKind(t, h, tok, 0, disk.KindWriteAt)
	stepKind(t, h, tok, 0, disk.KindSync)
	r := stepKind(t, h, tok, 0, disk.KindReadAt)
	if got := kinds(h.trace); got != "create,syncdir,write,sync,read" {
		t.Fatalf("op sequence %s", got)
	}
	// The first write lays the zeros the next commits overwrite (prealloc.go); the
	// read-back covers its frame.
	frameLen := len(w.Data) - plog.DefaultPreallocBytes
	if w.Name != segName(0) || r.Name != w.Name || r.Off != w.Off || r.Len != frameLen ||
		!frame.IsZero(w.Data[frameLen:]) {
		t.Fatalf("read-back %v does not cover the frame of the write %v", r, w)
	}
	c := h.commits[tok]
	if c.Err != nil || c.BaseOffset != 0 || c.Count != 2 || h.l.HighWatermark() != 2 || len(h.pending) != 0 {
		t.Fatalf("answer %+v hw %d pending %s", c, h.l.HighWatermark(), h.pendingKinds())
	}
	h.trace = nil
	tok = h.commit("c")
	w = stepKind(t, h, tok, 2, disk.KindWriteAt)
	stepKind(t, h, tok, 2, disk.KindSync)
	if r = stepKind(t, h, tok, 2, disk.KindReadAt); w.Off != int64(frameLen) || r.Len != len(w.Data) {
		t.Fatalf("the second commit writes over the zeros, none of its own: %v, %v", w, r)
	}
	if c := h.commits[tok]; c.Err != nil || c.BaseOffset != 2 || c.Count != 1 || kinds(h.trace) != "write,sync,read" {
		t.Fatalf("second commit %+v, ops %s", c, kinds(h.trace))
	}
	if got := payloadsOf(h.readNow(0, 10).Records); got != "0=a,1=kb" {
		t.Fatalf("read %s", got)
	}
	rec := h.readNow(1, 1).Records[0]
	if !rec.HasKey || string(rec.Key) != "key-kb" || rec.CommitTimeMs != h.now/1_000_000 {
		t.Fatalf("envelope %+v", rec)
	}
}

func TestSilentWriteCorruptionCaughtByReadBack(t *testing.T) {
	var flipped, lost uint64
	for seed := uint64(1); seed <= 30; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{WriteCorruptProb: 1})
		d.SetFaults(false)
		h := newHarness(t, plog.Config{PreallocBytes: -1}, d) // the corruption must hit the frame
		if c := h.commitNow("a", "b"); c.Err != nil {
			t.Fatal(c.Err)
		}
		sizeBefore := len(d.DurableFiles()[segName(0)])
		h.trace = nil
		d.SetFaults(true) // the commit's write reports success and stores something else
		c := h.commitNow("c", "d")
		d.SetFaults(false)
		if !errors.Is(c.Err, plog.ErrRetry) || h.l.HighWatermark() != 2 || h.failed != nil {
			t.Fatalf("seed %d: %+v hw %d failed %v", seed, c, h.l.HighWatermark(), h.failed)
		}
		if got := kinds(h.trace); got != "write,sync,read,truncate,sync" {
			t.Fatalf("seed %d: op sequence %s", seed, got)
		}
		if got := len(d.DurableFiles()[segName(0)]); got != sizeBefore {
			t.Fatalf("seed %d: durable size %d after the cut, want %d", seed, got, sizeBefore)
		}
		if r := h.readNow(2, 10); len(r.Records) != 0 || r.Err != nil {
			t.Fatalf("seed %d: the refused commit is visible: %+v", seed, r)
		}
		if c := h.commitNow("c", "d"); c.Err != nil || c.BaseOffset != 2 {
			t.Fatalf("seed %d: retry %+v", seed, c)
		}
		h.crash()
		if got := payloadsOf(h.readNow(2, 10).Records); got != "2=c,3=d" || h.recovered.HighWatermark != 4 {
			t.Fatalf("seed %d: after the retry and a crash: %s (decisions %v)", seed, got, h.recovered.Decisions)
		}
		flipped += d.Stats().WritesCorrupted
		lost += d.Stats().WritesLost
	}
	if flipped == 0 || lost == 0 {
		t.Fatalf("both kinds of silent corruption should be exercised: %d flipped, %d lost", flipped, lost)
	}
}

func TestFailedWriteIsCutAndRetried(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow("a")
	h.trace = nil
	tok := h.commit("b")
	h.completeKind(disk.KindWriteAt, disk.ErrNoSpace)
	h.completeAll()
	if c := h.commits[tok]; !errors.Is(c.Err, plog.ErrRetry) || kinds(h.trace) != "write,truncate,sync" {
		t.Fatalf("%+v ops %s", c, kinds(h.trace))
	}
	if c := h.commitNow("b"); c.Err != nil || c.BaseOffset != 1 || h.l.Stats().CommitRetries != 1 {
		t.Fatalf("retry %+v stats %+v", c, h.l.Stats())
	}
}

func TestReadBackReadErrorIsReread(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	tok := h.commit("a")
	h.completeKind(disk.KindCreate, nil)
	h.completeKind(disk.KindSyncDir, nil)
	h.completeKind(disk.KindWriteAt, nil)
	h.completeKind(disk.KindSync, nil)
	h.completeKind(disk.KindReadAt, disk.ErrIO)
	if _, ok := h.commits[tok]; ok {
		t.Fatalf("answered on a failed read-back")
	}
	h.completeKind(disk.KindReadAt, nil)
	if c := h.commits[tok]; c.Err != nil {
		t.Fatalf("%+v", c)
	}
}

func TestFailedSyncPoisonsCommitsReadsGoOn(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow("a")
	tok := h.commit("b")
	h.completeKind(disk.KindWriteAt, nil)
	h.completeKind(disk.KindSync, disk.ErrIO)
	if c := h.commits[tok]; !errors.Is(c.Err, plog.ErrFailed) || !errors.Is(h.l.Failed(), plog.ErrFailed) {
		t.Fatalf("commit %+v failed %v", c, h.l.Failed())
	}
	if h.failed != nil {
		t.Fatalf("Failed reported before the untrusted frame was cut")
	}
	h.completeKind(disk.KindTruncate, nil)
	h.completeKind(disk.KindSync, nil)
	if !errors.Is(h.failed, plog.ErrFailed) || len(h.pending) != 0 {
		t.Fatalf("failed %v pending %s", h.failed, h.pendingKinds())
	}
	tok = h.commit("c")
	if c := h.commits[tok]; !errors.Is(c.Err, plog.ErrFailed) || len(h.pending) != 0 {
		t.Fatalf("commit after poisoning: %+v pending %s", c, h.pendingKinds())
	}
	if got := payloadsOf(h.readNow(0, 10).Records); got != "0=a" || h.l.HighWatermark() != 1 {
		t.Fatalf("reads must go on: %s hw %d", got, h.l.HighWatermark())
	}
	h.open() // a restart reopens the log: commits work again, b was never made visible
	if h.recovered.HighWatermark != 1 {
		t.Fatalf("reopened at %d: %v", h.recovered.HighWatermark, h.recovered.Decisions)
	}
	if c := h.commitNow("c"); c.Err != nil || c.BaseOffset != 1 {
		t.Fatalf("after reopen %+v", c)
	}
}

// With the simulator's own failed fdatasync (pages lost for good, marked clean), a
// restart without a machine crash must not expose the frame that the page cache still
// shows: the cut before Failed is what prevents it.
func TestFailedSyncRestartThenCrashKeepsHighWatermark(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{SyncFailProb: 1})
		d.SetFaults(false)
		h := newHarness(t, plog.Config{}, d)
		h.commitNow("a")
		tok := h.commit("b")
		h.completeKind(disk.KindWriteAt, nil)
		d.SetFaults(true)
		h.completeAll() // the commit's sync fails, and so does the sync of the cut
		d.SetFaults(false)
		if !errors.Is(h.commits[tok].Err, plog.ErrFailed) || h.failed == nil {
			t.Fatalf("seed %d: %+v failed %v", seed, h.commits[tok], h.failed)
		}
		h.open()
		hw := h.recovered.HighWatermark
		h.crash()
		if h.recovered.HighWatermark < hw || hw != 1 {
			t.Fatalf("seed %d: high-watermark %d after restart, %d after crash", seed, hw, h.recovered.HighWatermark)
		}
	}
}

func TestFailedCutSyncPoisons(t *testing.T) {
	d := sim.NewDisk(rng.New(3), sim.DiskConfig{WriteCorruptProb: 1})
	d.SetFaults(false)
	h := newHarness(t, plog.Config{}, d)
	h.commitNow("a")
	d.SetFaults(true)
	tok := h.commit("b")
	h.completeKind(disk.KindWriteAt, nil)
	d.SetFaults(false)
	h.completeKind(disk.KindSync, nil)
	h.completeKind(disk.KindReadAt, nil)
	h.completeKind(disk.KindTruncate, nil)
	h.completeKind(disk.KindSync, disk.ErrIO)
	if c := h.commits[tok]; !errors.Is(c.Err, plog.ErrFailed) || !errors.Is(h.failed, plog.ErrFailed) {
		t.Fatalf("%+v failed %v", c, h.failed)
	}
}

func TestCommitLimits(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	big := func(n int) []byte { return make([]byte, n) }
	many := make([]plog.Entry, plog.EntriesMax+1)
	huge := make([]plog.Entry, 17)
	for i := range huge {
		huge[i].Payload = big(plog.PayloadBytesMax)
	}
	cases := []struct {
		name string
		es   []plog.Entry
		err  error
	}{
		{"empty", nil, plog.ErrEmpty},
		{"entries", many, plog.ErrTooLarge},
		{"key", []plog.Entry{{HasKey: true, Key: big(plog.KeyBytesMax + 1)}}, plog.ErrTooLarge},
		{"payload", []plog.Entry{{Payload: big(plog.PayloadBytesMax + 1)}}, plog.ErrTooLarge},
		{"batch", huge, plog.ErrTooLarge},
	}
	for _, c := range cases {
		h.token++
		h.l.Commit(h.now, h.token, c.es)
		h.pump()
		if got := h.commits[h.token]; !errors.Is(got.Err, c.err) || len(h.pending) != 0 || h.l.HighWatermark() != 0 {
			t.Fatalf("%s: %+v pending %s", c.name, got, h.pendingKinds())
		}
	}
	edge := []plog.Entry{{HasKey: true, Key: big(plog.KeyBytesMax), Payload: big(plog.PayloadBytesMax)}, {}}
	h.token++
	h.l.Commit(h.now, h.token, edge)
	h.pump()
	h.completeAll()
	if c := h.commits[h.token]; c.Err != nil || c.Count != 2 {
		t.Fatalf("entries at the limits: %+v", c)
	}
	r := h.readNow(0, 5)
	if len(r.Records) != 2 || !bytes.Equal(r.Records[0].Payload, edge[0].Payload) || len(r.Records[1].Payload) != 0 || r.Records[1].HasKey {
		t.Fatalf("read at the limits: %d records, %v", len(r.Records), r.Err)
	}
}

func TestSecondCommitInFlightPanics(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commit("a")
	defer func() {
		if recover() == nil {
			t.Fatalf("a second commit in flight must panic")
		}
	}()
	h.commit("b")
}

func TestCommitAndReadBeforeRecoveryAreNotReady(t *testing.T) {
	l := plog.New(plog.Config{Dir: testDir})
	l.Commit(0, 1, entries("a"))
	l.Open(0)
	l.Read(0, 2, 0, 1)
	rd := l.Ready()
	if len(rd.Commits) != 1 || !errors.Is(rd.Commits[0].Err, plog.ErrNotReady) ||
		len(rd.Reads) != 1 || !errors.Is(rd.Reads[0].Err, plog.ErrNotReady) || len(rd.Ops) != 1 {
		t.Fatalf("%+v", rd)
	}
}

func TestSegmentRollCreatesAndSyncsDirBeforeWriting(t *testing.T) {
	h := newHarness(t, plog.Config{SegmentBytesMax: 100}, nil)
	h.commitNow("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	h.commitNow("b") // the active segment passed 100 bytes: this one rolls
	h.trace = nil
	if c := h.commitNow("c", "d"); c.Err != nil || c.BaseOffset != 2 {
		t.Fatalf("%+v", c)
	}
	if got := kinds(h.trace); got != "write,sync,read" {
		t.Fatalf("third commit fits the second segment: %s", got)
	}
	files := h.d.DurableFiles()
	if _, ok := files[segName(1)]; !ok {
		t.Fatalf("second segment %s not durable: %v", segName(1), len(files))
	}
	h.commitNow("e")
	h.crash()
	if h.recovered.HighWatermark != 5 || h.l.Stats().SegmentsRolled != 0 {
		t.Fatalf("recovered %+v", h.recovered)
	}
	if got := payloadsOf(h.readNow(2, 5).Records); got != "2=c,3=d" {
		t.Fatalf("%s", got)
	}
}

// A frame the device stored otherwise, while the page cache holds it intact, is never
// published: commitDurable's read-back reads the device (Op.Device), not the cache.
func TestReadBackReadsTheDevice(t *testing.T) {
	d := sim.NewDisk(rng.New(5), sim.DiskConfig{})
	h := newHarness(t, plog.Config{}, d)
	h.commitNow("warm") // the segment exists and is durable
	d.SetConfig(sim.DiskConfig{WriteCorruptProb: 1})
	h.trace = nil
	c := h.commitNow("x")
	var read *disk.Op
	for i, op := range h.trace {
		if op.Kind == disk.KindReadAt {
			read = &h.trace[i]
			break
		}
	}
	if read == nil || !read.Device {
		t.Fatalf("the read-back must read the device: %s", kinds(h.trace))
	}
	if c.Err == nil || h.l.HighWatermark() != 1 {
		t.Fatalf("a frame corrupted on the device was published: %+v, hw %d", c, h.l.HighWatermark())
	}
}
