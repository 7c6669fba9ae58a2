package plog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// One test per row of the recovery decision table in doc.go.

func hasDecision(r *plog.Recovery, row string) bool {
	for _, d := range r.Decisions {
		if strings.HasPrefix(d, row+" ") {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// frames encodes one batch per payload, the first at offset base, one entry each. It
// returns the bytes and where each frame starts.
func frames(base uint64, payloads ...string) ([]byte, []int) {
	var b []byte
	var starts []int
	for i, p := range payloads {
		starts = append(starts, len(b))
		b = plog.AppendBatch(b, base+uint64(i), 1000, entries(p))
	}
	return b, starts
}

// writeSegment lays down a durable segment named by base holding the given bytes.
func writeSegment(t *testing.T, d *sim.Disk, base uint64, b []byte) {
	t.Helper()
	must(t, d.Create(segName(base)))
	must(t, d.WriteAt(segName(base), 0, b))
	must(t, d.Sync(segName(base)))
	must(t, d.SyncDir(testDir))
}

func newDisk() *sim.Disk { return sim.NewDisk(rng.New(1), sim.DiskConfig{}) }

// readAll reads every offset in [from, to) one at a time and renders the outcome.
func readAll(h *harness, from, to uint64) string {
	var s []string
	for off := from; off < to; off++ {
		r := h.readNow(off, 1)
		switch {
		case r.Err != nil:
			s = append(s, fmt.Sprintf("%d=%s", off, errName(r.Err)))
		case len(r.Records) == 0:
			s = append(s, fmt.Sprintf("%d=none", off))
		default:
			s = append(s, payloadsOf(r.Records))
		}
	}
	return strings.Join(s, ",")
}

func errName(err error) string {
	for _, e := range []error{plog.ErrCorrupt, plog.ErrRemoved, plog.ErrFailed, plog.ErrNotReady} {
		if errors.Is(err, e) {
			return strings.TrimPrefix(e.Error(), "plog: ")
		}
	}
	return err.Error()
}

func TestRecoveryR1EmptyDirectory(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	r := h.recovered
	if !hasDecision(r, "R1") || r.HighWatermark != 0 || r.OldestOffset != 0 {
		t.Fatalf("%+v", r)
	}
	if c := h.commitNow("a"); c.Err != nil || c.BaseOffset != 0 {
		t.Fatalf("first commit %+v", c)
	}
	if _, ok := h.d.DurableFiles()[segName(0)]; !ok {
		t.Fatalf("first segment not durable")
	}
}

// An empty log with a base offset starts there (a partition under a new epoch): its
// first commit lands at the base, an offset below it is removed, and a restart takes
// the offsets from the segment, whatever the base says then.
func TestEmptyLogStartsAtItsBaseOffset(t *testing.T) {
	const base = 3 << 40
	h := newHarness(t, plog.Config{BaseOffset: base}, nil)
	if r := h.recovered; r.HighWatermark != base || r.OldestOffset != base {
		t.Fatalf("%+v", r)
	}
	if c := h.commitNow("a", "b"); c.Err != nil || c.BaseOffset != base {
		t.Fatalf("first commit %+v", c)
	}
	if r := h.readNow(5, 1); !errors.Is(r.Err, plog.ErrRemoved) {
		t.Fatalf("read below the base: %+v", r)
	}
	if got := readAll(h, base, base+3); got != fmt.Sprintf("%d=a,%d=b,%d=none", base, base+1, base+2) {
		t.Fatalf("%s", got)
	}
	h2 := newHarness(t, plog.Config{}, h.d)
	if r := h2.recovered; r.HighWatermark != base+2 || r.OldestOffset != base {
		t.Fatalf("after a restart: %+v", r)
	}
}

func TestRecoveryR2R7ValidFramesCleanEnd(t *testing.T) {
	d := newDisk()
	b, _ := frames(0, "a", "b", "c")
	writeSegment(t, d, 0, b)
	must(t, d.Create(testDir+"/notes.txt")) // not a segment: ignored, left alone
	h := newHarness(t, plog.Config{}, d)
	r := h.recovered
	if !hasDecision(r, "R7") || !hasDecision(r, "--") || r.HighWatermark != 3 || r.Holes != 0 {
		t.Fatalf("%+v", r)
	}
	if got := readAll(h, 0, 4); got != "0=a,1=b,2=c,3=none" {
		t.Fatalf("%s", got)
	}
	if c := h.commitNow("d"); c.Err != nil || c.BaseOffset != 3 {
		t.Fatalf("%+v", c)
	}
}

// A frame larger than a recovery read is read whole.
func TestRecoveryR2FrameLargerThanARead(t *testing.T) {
	d := newDisk()
	b, _ := frames(0, "a", strings.Repeat("x", 5000), "c")
	writeSegment(t, d, 0, b)
	h := newHarness(t, plog.Config{RecoveryReadBytes: 64}, d)
	if h.recovered.HighWatermark != 3 || !hasDecision(h.recovered, "R7") {
		t.Fatalf("%+v", h.recovered)
	}
	if r := h.readNow(1, 1); len(r.Records) != 1 || len(r.Records[0].Payload) != 5000 {
		t.Fatalf("%+v", r.Err)
	}
}

func TestRecoveryR3ReReadsCorruptedReads(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{ReadCorruptProb: 0.3, ReadErrorProb: 0.1})
		d.SetFaults(false)
		b, _ := frames(0, "a", "b", "c", "d", strings.Repeat("e", 300))
		writeSegment(t, d, 0, b)
		d.SetFaults(true)
		h := newHarness(t, plog.Config{RecoveryReadBytes: 100}, d)
		r := h.recovered
		if h.failed != nil || r.HighWatermark != 5 || r.Holes != 0 || hasDecision(r, "R4") || hasDecision(r, "R5") {
			t.Fatalf("seed %d: failed %v recovery %+v", seed, h.failed, r)
		}
		if got := len(d.DurableFiles()[segName(0)]); got != len(b) {
			t.Fatalf("seed %d: a corrupted read cut the segment to %d", seed, got)
		}
	}
}

func TestRecoveryR4SkipsDamagedMiddleFrame(t *testing.T) {
	d := newDisk()
	b, starts := frames(0, "aaaa", "bbbb", "cccc")
	b[starts[1]+frameBodyAt] ^= 0x40 // inside b's frame: its CRC fails
	writeSegment(t, d, 0, b)
	h := newHarness(t, plog.Config{}, d)
	r := h.recovered
	if !hasDecision(r, "R4") || r.Holes != 1 || r.HighWatermark != 3 {
		t.Fatalf("%+v", r)
	}
	if got := readAll(h, 0, 3); got != "0=aaaa,1=record unreadable,2=cccc" {
		t.Fatalf("%s", got)
	}
	if c := h.commitNow("d"); c.Err != nil || c.BaseOffset != 3 {
		t.Fatalf("%+v", c)
	}
}

// A whole frame of zeros with valid frames after it is damage, not never-written space:
// R12 takes only zeros that run to the end of the segment (narad_mut_zeroheader).
func TestRecoveryR4ZeroedMiddleFrameIsNotTheEnd(t *testing.T) {
	d := newDisk()
	b, starts := frames(0, "aaaa", "bbbb", "cccc")
	clear(b[starts[1]:starts[2]])
	writeSegment(t, d, 0, b)
	h := newHarness(t, plog.Config{}, d)
	r := h.recovered
	if !hasDecision(r, "R4") || hasDecision(r, "R12") || r.Holes != 1 || r.HighWatermark != 3 {
		t.Fatalf("%+v", r)
	}
	if got := readAll(h, 0, 3); got != "0=aaaa,1=record unreadable,2=cccc" {
		t.Fatalf("%s", got)
	}
}

// frameBodyAt is a byte inside the first entry of a one-entry frame.
const frameBodyAt = 9 + 20 + 8

func TestRecoveryR5TruncatesTornTail(t *testing.T) {
	for _, tear := range []string{"partial", "zeros", "flipped"} {
		d := newDisk()
		good, _ := frames(0, "a", "b")
		torn := plog.AppendBatch(nil, 2, 1000, entries("torn"))
		switch tear {
		case "partial":
			torn = torn[:len(torn)-3]
		case "zeros":
			torn = make([]byte, len(torn))
		case "flipped":
			torn[frameBodyAt] ^= 1
		}
		writeSegment(t, d, 0, append(append([]byte{}, good...), torn...))
		h := newHarness(t, plog.Config{PreallocBytes: -1}, d) // no zero tail: a clean end is R7
		r := h.recovered
		row, size := "R5", len(good)
		if tear == "zeros" {
			row, size = "R12", len(good)+len(torn) // zeros to the end are kept (prealloc.go)
		}
		if !hasDecision(r, row) || r.HighWatermark != 2 || r.Holes != 0 {
			t.Fatalf("%s: %+v", tear, r)
		}
		if got := len(d.DurableFiles()[segName(0)]); got != size {
			t.Fatalf("%s: durable size after recovery %d, want %d", tear, got, size)
		}
		if c := h.commitNow("c"); c.Err != nil || c.BaseOffset != 2 {
			t.Fatalf("%s: %+v", tear, c)
		}
		h.crash()
		end := "R7"
		if tear == "zeros" {
			end = "R12" // c was written over the zeros; the rest are still there
		}
		if got := readAll(h, 0, 3); got != "0=a,1=b,2=c" || !hasDecision(h.recovered, end) {
			t.Fatalf("%s: after the cut, commits continue cleanly: %s %v", tear, got, h.recovered.Decisions)
		}
	}
}

// A misdirected write can leave a whole, valid frame of another partition's log in this
// one's torn tail, with offsets past this log's (cluster seed 8865: a frame of a
// partition a forget had moved to epoch 1, in the tail of an epoch-0 log). It fails its
// tag here, so the tail is cut (R5); taken as R4, it made the offsets up to its own a
// hole, which consumes never got past, and the log went on from there.
func TestRecoveryR5CutsAnotherPartitionsFrameInTheTornTail(t *testing.T) {
	d := newDisk()
	var good []byte
	for i, p := range []string{"a", "b"} {
		good = plog.AppendBatchFor(good, testDir, uint64(i), 1000, entries(p))
	}
	torn := plog.AppendBatchFor(nil, testDir, 2, 1000, entries("torn, overwritten"))
	foreign := plog.AppendBatchFor(nil, "parts/000000000000002a-4", 1<<40, 1000, entries("x"))
	copy(torn[10:], foreign) // the misdirected write landed inside the torn frame
	writeSegment(t, d, 0, append(append([]byte{}, good...), torn...))
	h := newHarness(t, plog.Config{}, d)
	r := h.recovered
	if !hasDecision(r, "R5") || hasDecision(r, "R4") || r.HighWatermark != 2 || r.Holes != 0 {
		t.Fatalf("%+v", r)
	}
	if c := h.commitNow("c"); c.Err != nil || c.BaseOffset != 2 {
		t.Fatalf("%+v", c)
	}
}

func TestRecoveryR6DamagedTailOfAnOlderSegmentIsKept(t *testing.T) {
	d := newDisk()
	b, starts := frames(0, "a", "b")
	b[starts[1]+frameBodyAt] ^= 0x40 // offset 1 damaged, at the end of segment 0
	writeSegment(t, d, 0, b)
	c, _ := frames(2, "c")
	writeSegment(t, d, 2, c)
	h := newHarness(t, plog.Config{}, d)
	r := h.recovered
	if !hasDecision(r, "R6") || !hasDecision(r, "R8") || r.Holes != 1 || r.HighWatermark != 3 {
		t.Fatalf("%+v", r)
	}
	if got := len(d.DurableFiles()[segName(0)]); got != len(b) {
		t.Fatalf("an older segment was cut to %d bytes", got)
	}
	if got := readAll(h, 0, 3); got != "0=a,1=record unreadable,2=c" {
		t.Fatalf("%s", got)
	}
}

func TestRecoveryR8GapBetweenSegments(t *testing.T) {
	d := newDisk()
	a, _ := frames(0, "a", "b")
	writeSegment(t, d, 0, a)
	f, _ := frames(5, "f")
	writeSegment(t, d, 5, f)
	h := newHarness(t, plog.Config{}, d)
	r := h.recovered
	if !hasDecision(r, "R8") || r.Holes != 1 || r.HighWatermark != 6 || r.OldestOffset != 0 {
		t.Fatalf("%+v", r)
	}
	if got := readAll(h, 1, 6); got != "1=b,2=record unreadable,3=record unreadable,4=record unreadable,5=f" {
		t.Fatalf("%s", got)
	}
}

func TestRecoveryR9OverlappingSegmentsFail(t *testing.T) {
	d := newDisk()
	a, _ := frames(0, "a", "b", "c")
	writeSegment(t, d, 0, a)
	b, _ := frames(1, "x")
	writeSegment(t, d, 1, b)
	h := newHarness(t, plog.Config{}, d)
	if !errors.Is(h.failed, plog.ErrFailed) || h.recovered != nil {
		t.Fatalf("want recovery failure, got %v", h.failed)
	}
	if r := h.readNow(0, 1); !errors.Is(r.Err, plog.ErrFailed) {
		t.Fatalf("a failed recovery serves nothing: %+v", r)
	}
	if c := h.commitNow("d"); !errors.Is(c.Err, plog.ErrFailed) || len(h.pending) != 0 {
		t.Fatalf("%+v", c)
	}
}

func TestRecoveryR10PersistentReadErrorsFail(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{ReadErrorProb: 1})
	d.SetFaults(false)
	a, _ := frames(0, "a")
	writeSegment(t, d, 0, a)
	d.SetFaults(true)
	h := newHarness(t, plog.Config{}, d)
	if !errors.Is(h.failed, plog.ErrFailed) || h.recovered != nil {
		t.Fatalf("want recovery failure, got %v", h.failed)
	}
}

// A process restart (no machine crash) finds a frame that was written but never synced:
// recovery keeps it, so it syncs it before reporting, and a later crash cannot take it
// back from under the reported high-watermark.
func TestRecoverySyncsWhatItExposes(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow("a")
	h.commit("b")
	h.completeKind(disk.KindWriteAt, nil)
	h.open() // the process died before the fdatasync
	if h.recovered.HighWatermark != 2 {
		t.Fatalf("the page cache shows b: %+v", h.recovered)
	}
	h.crash()
	if h.recovered.HighWatermark != 2 {
		t.Fatalf("high-watermark went back to %d", h.recovered.HighWatermark)
	}
	if got := readAll(h, 0, 2); got != "0=a,1=b" {
		t.Fatalf("%s", got)
	}
}

// A crash in the middle of a commit leaves a torn tail in the real crash model.
func TestRecoveryAfterCrashMidCommit(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{CrashKeepProb: 0.3, CrashTearProb: 0.5, CrashGarbageProb: 0.5})
		h := newHarness(t, plog.Config{}, d)
		h.commitNow("a", "b")
		h.commit(strings.Repeat("c", 6000), "d")
		h.completeKind(disk.KindWriteAt, nil)
		h.crash()
		r := h.recovered
		if h.failed != nil || (r.HighWatermark != 2 && r.HighWatermark != 4) || r.Holes != 0 {
			t.Fatalf("seed %d: %v %+v", seed, h.failed, r)
		}
		if got := readAll(h, 0, 2); got != "0=a,1=b" {
			t.Fatalf("seed %d: %s", seed, got)
		}
	}
}

// R11: a frame whose write was silently corrupted and never synced, and whose damage a
// recovery read happens to undo in passing, is read back after the recovery sync and cut,
// instead of being exposed and then cut by the next restart (the high-watermark would
// move backwards).
func TestRecoveryR11ReadsTheNewestFrameBackAfterTheSync(t *testing.T) {
	h := newHarness(t, plog.Config{}, nil)
	h.commitNow("a")
	h.commit("b")
	w := h.completeKind(disk.KindWriteAt, nil)
	at := w.Off + 20
	stored, err := h.d.ReadAt(w.Name, at, 1)
	must(t, err)
	must(t, h.d.WriteAt(w.Name, at, []byte{stored[0] ^ 1})) // the device stored other bytes
	undone := false
	h.alter = func(op disk.Op, res *disk.Result) {
		if !undone && op.Kind == disk.KindReadAt && op.Name == w.Name && op.Off <= at && at < op.Off+int64(len(res.Data)) {
			res.Data[at-op.Off] ^= 1 // one read corrupted in passing cancels the damage
			undone = true
		}
	}
	h.open() // the process died before the fdatasync
	h.alter = nil
	if !undone {
		t.Fatalf("recovery never read the damaged byte")
	}
	if h.recovered.HighWatermark != 1 || !hasDecision(h.recovered, "R11") {
		t.Fatalf("the frame that never verified was exposed: %+v", h.recovered)
	}
	h.open()
	if h.recovered.HighWatermark != 1 || h.recovered.Holes != 0 {
		t.Fatalf("high-watermark moved: %+v", h.recovered)
	}
	if got := readAll(h, 0, 1); got != "0=a" {
		t.Fatalf("%s", got)
	}
}

// A reopen (Config.VerifiedEnd) cuts every frame at or past the earlier machine's
// verified end: they are of a commit answered failed, sent again elsewhere (issue 13,
// point 4); the log then commits at that offset again.
func TestReopenCutsFramesPastTheVerifiedEnd(t *testing.T) {
	d := newDisk()
	b, _ := frames(0, "a", "b", "c")
	writeSegment(t, d, 0, b)
	h := newHarness(t, plog.Config{VerifiedEnd: 2, HasVerifiedEnd: true}, d)
	r := h.recovered
	if r.HighWatermark != 2 || !hasDecision(r, "reopen:") {
		t.Fatalf("%+v", r)
	}
	if got := readAll(h, 0, 3); got != "0=a,1=b,2=none" {
		t.Fatalf("%s", got)
	}
	if c := h.commitNow("d"); c.Err != nil || c.BaseOffset != 2 {
		t.Fatalf("%+v", c)
	}
	h2 := newHarness(t, plog.Config{}, d) // a restart: the cut was durable
	if got := readAll(h2, 0, 4); got != "0=a,1=b,2=d,3=none" {
		t.Fatalf("after a restart: %s", got)
	}
}

// A verified end at or past everything stored cuts nothing.
func TestReopenKeepsWhatIsVerified(t *testing.T) {
	d := newDisk()
	b, _ := frames(0, "a", "b")
	writeSegment(t, d, 0, b)
	h := newHarness(t, plog.Config{VerifiedEnd: 2, HasVerifiedEnd: true}, d)
	if r := h.recovered; r.HighWatermark != 2 || hasDecision(r, "reopen:") {
		t.Fatalf("%+v", r)
	}
}
