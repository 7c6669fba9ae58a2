package plog_test

import (
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/frame"
	"github.com/narad/narad/core/plog"
)

const preallocTest = 4096

// writesOf answers the commit writes in the trace, in order.
func writesOf(ops []disk.Op) []disk.Op {
	var ws []disk.Op
	for _, op := range ops {
		if op.Kind == disk.KindWriteAt {
			ws = append(ws, op)
		}
	}
	return ws
}

// zerosAfter answers how many zeros a write carries after the frame its read-back covers.
func zerosAfter(t *testing.T, h *harness, w disk.Op) int {
	t.Helper()
	for _, op := range h.trace {
		if op.Kind == disk.KindReadAt && op.Name == w.Name && op.Off == w.Off {
			if !frame.IsZero(w.Data[op.Len:]) {
				t.Fatalf("write %v carries other bytes than zeros after its frame", w)
			}
			return len(w.Data) - op.Len
		}
	}
	t.Fatalf("no read-back of the write %v", w)
	return 0
}

// The first commit lays the zeros, the next ones write over them without growing the
// file, and the commit that would pass their end lays more.
func TestCommitsWriteOverTheZeros(t *testing.T) {
	h := newHarness(t, plog.Config{PreallocBytes: preallocTest}, nil)
	frame := 0
	for i := 0; ; i++ {
		h.trace = nil
		if c := h.commitNow(strings.Repeat("x", 300)); c.Err != nil {
			t.Fatal(c.Err)
		}
		w := writesOf(h.trace)[0]
		frame = len(w.Data) - zerosAfter(t, h, w)
		wantZeros := 0
		if i == 0 || int(w.Off)+frame > preallocTest+frame { // the first frame's end plus the zeros
			wantZeros = preallocTest
		}
		if got := zerosAfter(t, h, w); got != wantZeros {
			t.Fatalf("commit %d at %d: %d zeros after the frame, want %d", i, w.Off, got, wantZeros)
		}
		if wantZeros > 0 && i > 0 {
			break
		}
		if n := size(h.d.Size(segName(0))); n != frame+preallocTest {
			t.Fatalf("commit %d grew the file to %d, want %d", i, n, frame+preallocTest)
		}
	}
}

// A cut (here of a write that failed) takes the zeros with the frame, so the retry lays
// them again: a log that trusted zeros it cut would grow its file at every sync.
func TestCutLaysZerosAgain(t *testing.T) {
	h := newHarness(t, plog.Config{PreallocBytes: preallocTest}, nil)
	if c := h.commitNow("a"); c.Err != nil {
		t.Fatal(c.Err)
	}
	tok := h.commit("b")
	h.completeKind(disk.KindWriteAt, disk.ErrIO)
	h.completeAll()
	if c := h.commits[tok]; c.Err == nil {
		t.Fatalf("a failed write was answered: %+v", c)
	}
	h.trace = nil
	if c := h.commitNow("b"); c.Err != nil {
		t.Fatal(c.Err)
	}
	if got := zerosAfter(t, h, writesOf(h.trace)[0]); got != preallocTest {
		t.Fatalf("the commit after a cut carries %d zeros, want %d", got, preallocTest)
	}
}

// Row R12: a restart finds the zeros past the last frame, keeps them and every record,
// and the next commit writes over them without laying more.
func TestRecoveryR12KeepsZerosToTheEnd(t *testing.T) {
	h := newHarness(t, plog.Config{PreallocBytes: preallocTest}, nil)
	h.commitNow("a")
	h.commitNow("b", "c")
	frames := int(h.l.Stats().BytesCommitted)
	h.crash()
	if !hasDecision(h.recovered, "R12") || hasDecision(h.recovered, "R5") ||
		h.recovered.HighWatermark != 3 {
		t.Fatalf("recovery: %+v", h.recovered)
	}
	if got := len(h.d.DurableFiles()[segName(0)]); got <= frames {
		t.Fatalf("durable size after recovery %d: the zeros past the frames' %d were cut", got, frames)
	}
	if got := readAll(h, 0, 3); got != "0=a,1=b,2=c" {
		t.Fatalf("records after recovery: %s", got)
	}
	h.trace = nil
	h.commitNow("d")
	if w := writesOf(h.trace)[0]; int(w.Off) != frames || zerosAfter(t, h, w) != 0 {
		t.Fatalf("the first commit after recovery: %v, %d zeros", w, zerosAfter(t, h, w))
	}
	if got := readAll(h, 0, 4); got != "0=a,1=b,2=c,3=d" {
		t.Fatalf("records: %s", got)
	}
}

// A roll trims the zeros of the segment it leaves, so that recovery does not search them
// (R6) in every older segment.
func TestRollTrimsTheZeros(t *testing.T) {
	h := newHarness(t, plog.Config{PreallocBytes: preallocTest, SegmentBytesMax: 1}, nil)
	h.commitNow("a")
	frame := h.l.Stats().BytesCommitted
	h.commitNow("b") // past SegmentBytesMax: rolls
	if got := size(h.d.Size(segName(0))); uint64(got) != frame {
		t.Fatalf("the segment left holds %d bytes, want its frame's %d", got, frame)
	}
	h.crash()
	if hasDecision(h.recovered, "R6") || readAll(h, 0, 2) != "0=a,1=b" {
		t.Fatalf("recovery: %+v", h.recovered)
	}
}

// size is a file's size as Size answers it (0 when it failed: the test then fails).
func size(n int, _ error) int { return n }
