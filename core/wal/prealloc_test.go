package wal_test

import (
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/frame"
	"github.com/narad/narad/core/wal"
)

const preallocTest = 4096

// groupWrite appends one record and completes its group, answering the group's write
// and the bytes of it that are frames (its read-back's length).
func groupWrite(t *testing.T, h *harness, payload string) (disk.Op, int) {
	t.Helper()
	tok := h.append("t", []byte(payload))
	w := h.complete(0, nil)
	h.complete(0, nil) // sync
	r := h.complete(0, nil)
	if w.Kind != disk.KindWriteAt || r.Kind != disk.KindReadAt || r.Off != w.Off {
		t.Fatalf("group ops: %v then %v", w, r)
	}
	if d, ok := h.done[tok]; !ok || d.Err != nil {
		t.Fatalf("append %d: %+v", tok, d)
	}
	if !frame.IsZero(w.Data[r.Len:]) {
		t.Fatalf("the group write carries other bytes than zeros after its frames")
	}
	return w, r.Len
}

// The first group lays the zeros, the next ones write over them without growing the
// segment, and the group that would pass their end lays more.
func TestGroupsWriteOverTheZeros(t *testing.T) {
	h := newHarness(t, wal.Config{PreallocBytes: preallocTest}, nil)
	seg := "wal/0000000000000001.seg"
	w, frames := groupWrite(t, h, strings.Repeat("x", 300))
	if len(w.Data)-frames != preallocTest {
		t.Fatalf("the first group carries %d zeros, want %d", len(w.Data)-frames, preallocTest)
	}
	zeroEnd := frames + preallocTest
	for {
		w, frames = groupWrite(t, h, strings.Repeat("x", 300))
		if int(w.Off)+frames > zeroEnd {
			if len(w.Data)-frames != preallocTest {
				t.Fatalf("the group past the zeros carries %d zeros", len(w.Data)-frames)
			}
			return
		}
		if len(w.Data) != frames || size(h.d.Size(seg)) != zeroEnd {
			t.Fatalf("a group inside the zeros wrote %d bytes and left the segment %d long",
				len(w.Data), size(h.d.Size(seg)))
		}
	}
}

// A group cut back for lack of space takes the zeros with it; the next group lays them
// again.
func TestNoSpaceCutLaysZerosAgain(t *testing.T) {
	h := newHarness(t, wal.Config{PreallocBytes: preallocTest}, nil)
	groupWrite(t, h, "a")
	h.append("t", []byte("b"))
	h.complete(0, disk.ErrNoSpace)
	h.completeAll()
	h.now += wal.NoSpaceRetryNs
	if w, frames := groupWrite(t, h, "c"); len(w.Data)-frames != preallocTest {
		t.Fatalf("the group after a cut carries %d zeros, want %d", len(w.Data)-frames, preallocTest)
	}
}

// Row R10: a restart finds the zeros past the last frame and keeps them and every
// record; the next group writes over them without laying more.
func TestRecoveryR10KeepsZerosToTheEnd(t *testing.T) {
	h := newHarness(t, wal.Config{PreallocBytes: preallocTest}, nil)
	_, a := groupWrite(t, h, "a")
	_, b := groupWrite(t, h, "b")
	h.crash()
	seg := "wal/0000000000000001.seg"
	if h.recovered == nil || len(h.recovered.Records) != 2 || !hasRow(h.recovered, "R10") ||
		hasRow(h.recovered, "R7") {
		t.Fatalf("recovered %+v", h.recovered)
	}
	if got := len(h.d.DurableFiles()[seg]); got != a+preallocTest { // a's group laid the zeros
		t.Fatalf("durable size after recovery %d, want the frames and zeros' %d", got, a+preallocTest)
	}
	if w, frames := groupWrite(t, h, "c"); int(w.Off) != a+b || len(w.Data) != frames {
		t.Fatalf("the group after recovery: %v, %d bytes of frames", w, frames)
	}
	h.crash()
	if len(h.recovered.Records) != 3 {
		t.Fatalf("recovered %+v", h.recovered)
	}
}

func hasRow(r *wal.Recovery, row string) bool {
	for _, d := range r.Decisions {
		if strings.HasPrefix(d, row+" ") {
			return true
		}
	}
	return false
}

// size is a file's size as Size answers it (0 when it failed: the test then fails).
func size(n int, _ error) int { return n }
