package lease_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// TestAckStateMovesWithThePartition: the acks a source holds (below its floor and above
// it) are acked at a destination that imported them, durably once Flushed, so that only
// the records not acked are leased there, also after a crash.
func TestAckStateMovesWithThePartition(t *testing.T) {
	src := newHarness(t, lease.Config{}, nil)
	src.setHW(200)
	rs := src.lease(100)
	for _, r := range rs {
		if r.Offset < 40 || r.Offset%3 == 0 {
			src.mustAck(r)
		}
	}
	floor, acked := src.m.AckState()
	if floor != 40 || len(acked) == 0 || acked[0] < 40 {
		t.Fatalf("ack state floor %d acked %v", floor, acked)
	}
	dst := newHarness(t, lease.Config{Dir: "acks/000000000000002a-4"}, nil)
	dst.setHW(200)
	if err := dst.m.ImportAcks(dst.now, floor, acked); err != nil {
		t.Fatal(err)
	}
	dst.pump()
	if dst.m.Flushed() {
		t.Fatal("imported acks reported durable before their flush")
	}
	dst.completeAll()
	if !dst.m.Flushed() {
		t.Fatal("imported acks not durable after their flush")
	}
	dst.crash()
	for off := uint64(0); off < 200; off++ {
		if want := src.m.Acked(off); dst.m.Acked(off) != want {
			t.Fatalf("offset %d: acked %v at the destination, %v at the source", off, !want, want)
		}
	}
	got := dst.lease(200)
	for _, r := range got {
		if src.m.Acked(r.Offset) {
			t.Fatalf("acked offset %d leased at the destination", r.Offset)
		}
	}
	if want := 200 - 40 - len(acked); len(got) != want {
		t.Fatalf("%d leased at the destination, want %d", len(got), want)
	}
}

func TestImportAcksRefusesWhatDoesNotFit(t *testing.T) {
	dst := newHarness(t, lease.Config{}, nil)
	for _, c := range []struct {
		floor uint64
		acked []uint64
	}{{10, []uint64{9}}, {10, []uint64{12, 11}}, {10, []uint64{10 + lease.AckSpanMax}}} {
		if err := dst.m.ImportAcks(dst.now, c.floor, c.acked); err == nil {
			t.Fatalf("floor %d acked %v imported", c.floor, c.acked)
		}
	}
	if f, a := dst.m.AckState(); f != 0 || len(a) != 0 || len(dst.pending) != 0 {
		t.Fatalf("a refused import changed the state: floor %d acked %v", f, a)
	}
}

// TestAckStateRoundTrip: whatever a manager acked, a fresh one that imports its state
// (and crashes after the flush, on a disk that keeps or tears unsynced writes) holds
// exactly the same acked offsets.
func TestAckStateRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		src := newHarness(rt, lease.Config{}, nil)
		hw := rapid.Uint64Range(1, 3000).Draw(rt, "hw")
		src.setHW(hw)
		for _, r := range src.lease(int(hw)) {
			if rapid.Bool().Draw(rt, "ack") {
				src.mustAck(r)
			}
		}
		floor, acked := src.m.AckState()
		d := sim.NewDisk(rng.New(rapid.Uint64().Draw(rt, "seed")),
			sim.DiskConfig{CrashKeepProb: 0.5, CrashTearProb: 0.5})
		dst := newHarness(rt, lease.Config{Dir: "acks/000000000000002a-4"}, d)
		dst.setHW(hw)
		if err := dst.m.ImportAcks(dst.now, floor, acked); err != nil {
			rt.Fatal(err)
		}
		dst.pump()
		dst.completeAll()
		dst.crash()
		f2, a2 := dst.m.AckState()
		if f2 != floor || !slices.Equal(a2, acked) {
			rt.Fatalf("imported floor %d acked %v, recovered floor %d acked %v", floor, acked, f2, a2)
		}
	})
}
