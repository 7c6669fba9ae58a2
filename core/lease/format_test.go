package lease_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/narad/narad/core/lease"
)

func TestAckFrameRoundTrip(t *testing.T) {
	for _, c := range []struct {
		floor   uint64
		offsets []uint64
	}{
		{0, nil},
		{7, []uint64{7, 8, 1000}},
		{1 << 60, []uint64{1<<60 + 1, 1<<60 + lease.AckSpanMax - 1}},
	} {
		b := lease.AppendAckFrame([]byte("prefix"), c.floor, c.offsets)
		floor, offs, n, err := lease.DecodeAckFrame(b[6:])
		if err != nil || n != len(b)-6 || floor != c.floor || fmt.Sprint(offs) != fmt.Sprint(c.offsets) {
			t.Fatalf("%+v: got %d %v n=%d err=%v", c, floor, offs, n, err)
		}
	}
}

func TestAckFrameEveryBitFlipDetected(t *testing.T) {
	b := lease.AppendAckFrame(nil, 3, []uint64{4, 9})
	for i := 0; i < 8*len(b); i++ {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		if _, _, _, err := lease.DecodeAckFrame(c); err == nil {
			t.Fatalf("bit %d flipped and the frame still decodes", i)
		}
	}
	for n := 0; n < len(b); n++ {
		if _, _, _, err := lease.DecodeAckFrame(b[:n]); err == nil {
			t.Fatalf("frame cut at %d still decodes", n)
		}
	}
}

func TestAckFrameRefusesBadOffsets(t *testing.T) {
	for _, offs := range [][]uint64{{2}, {5, 5}, {6, 5}, {3 + lease.AckSpanMax}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("AppendAckFrame(3, %v) did not panic", offs)
				}
			}()
			lease.AppendAckFrame(nil, 3, offs)
		}()
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, c := range []struct {
		floor uint64
		acked []uint64
	}{
		{0, nil},
		{5, []uint64{6}},
		{5, []uint64{5, 13, 14, 200}}, // a set floor bit is kept as written
		{1 << 40, []uint64{1<<40 + 63, 1<<40 + 64, 1<<40 + 65}},
	} {
		b := lease.EncodeSnapshot(c.floor, c.acked)
		floor, acked, err := lease.DecodeSnapshot(b)
		if err != nil || floor != c.floor || fmt.Sprint(acked) != fmt.Sprint(c.acked) {
			t.Fatalf("%+v: got %d %v %v", c, floor, acked, err)
		}
		if _, _, err := lease.DecodeSnapshot(append(b, 0)); err == nil {
			t.Fatalf("%+v: trailing byte accepted", c)
		}
		for n := 0; n < len(b); n++ {
			if _, _, err := lease.DecodeSnapshot(b[:n]); err == nil {
				t.Fatalf("%+v: snapshot cut at %d still decodes", c, n)
			}
		}
	}
}

func FuzzDecodeAckFrame(f *testing.F) {
	f.Add(lease.AppendAckFrame(nil, 0, nil))
	f.Add(lease.AppendAckFrame(nil, 7, []uint64{7, 9, 100}))
	f.Add(frames([]uint64{1, 2}, []uint64{3, 4}))
	f.Add(make([]byte, 30))
	f.Fuzz(func(t *testing.T, b []byte) {
		floor, offs, n, err := lease.DecodeAckFrame(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("size %d of %d bytes", n, len(b))
		}
		if again := lease.AppendAckFrame(nil, floor, offs); !bytes.Equal(again, b[:n]) {
			t.Fatalf("decode then encode changed the frame")
		}
	})
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(lease.EncodeSnapshot(0, nil))
	f.Add(lease.EncodeSnapshot(5, []uint64{6, 9, 70}))
	f.Add(lease.AppendAckFrame(nil, 7, []uint64{7}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		floor, acked, err := lease.DecodeSnapshot(b)
		if err != nil {
			return
		}
		if again := lease.EncodeSnapshot(floor, acked); !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the snapshot")
		}
	})
}

// A tagged frame or snapshot decodes only in its own partition; an untagged one (written
// before tags) in any.
func TestTaggedFramesBelongToTheirPartition(t *testing.T) {
	const a, b = "acks/000000000000002a-3", "acks/000000000000002a-4"
	f := lease.AppendAckFrameFor(nil, a, 3, []uint64{4, 9})
	if floor, offs, _, err := lease.DecodeAckFrameFor(f, a); err != nil || floor != 3 || len(offs) != 2 {
		t.Fatalf("own frame: %d %v %v", floor, offs, err)
	}
	for _, dir := range []string{b, ""} {
		if _, _, _, err := lease.DecodeAckFrameFor(f, dir); err == nil {
			t.Fatalf("frame of %s decoded in %q", a, dir)
		}
	}
	s := lease.EncodeSnapshotFor(a, 5, []uint64{7})
	if _, _, err := lease.DecodeSnapshotFor(s, b); err == nil {
		t.Fatalf("snapshot of %s decoded in %s", a, b)
	}
	if _, _, err := lease.DecodeSnapshotFor(s, a); err != nil {
		t.Fatalf("own snapshot: %v", err)
	}
	if _, _, _, err := lease.DecodeAckFrameFor(lease.AppendAckFrame(nil, 3, nil), b); err != nil {
		t.Fatalf("untagged frame: %v", err)
	}
}
