package lease

import (
	"encoding/hex"
	"slices"
	"testing"
)

// The ack files' bytes as written by the code before the shared framing (core/frame): a
// change of any of them is a format change, which takes a new format byte.
const (
	goldenAckFrame = "" +
		"ac02c19f24000000010a00000000000000030000000c000000000000000f0000" +
		"00000000004600000000000000"
	goldenAckTagged = "" +
		"3590e19624000000030a00000000000000030000000c000000000000000f0000" +
		"00000000004600000000000000"
	goldenSnapshot   = "50017beb14000000020a000000000000003d0000002400000000000010"
	goldenSnapTagged = "63c13da014000000040a000000000000003d0000002400000000000010"
)

const goldenDir = "acks/t42-p3"

func TestFormatIsUnchanged(t *testing.T) {
	offsets := []uint64{12, 15, 70}
	for _, c := range []struct {
		name, dir, golden string
		snap              bool
	}{
		{"ack frame", "", goldenAckFrame, false},
		{"tagged ack frame", goldenDir, goldenAckTagged, false},
		{"snapshot", "", goldenSnapshot, true},
		{"tagged snapshot", goldenDir, goldenSnapTagged, true},
	} {
		var enc []byte
		if c.snap {
			enc = EncodeSnapshotFor(c.dir, 10, offsets)
		} else {
			enc = AppendAckFrameFor(nil, c.dir, 10, offsets)
		}
		if got := hex.EncodeToString(enc); got != c.golden {
			t.Errorf("%s\n got %s\nwant %s", c.name, got, c.golden)
		}
		b, _ := hex.DecodeString(c.golden)
		var floor uint64
		var acked []uint64
		var err error
		if c.snap {
			floor, acked, err = DecodeSnapshotFor(b, c.dir)
		} else {
			floor, acked, _, err = DecodeAckFrameFor(b, c.dir)
		}
		if err != nil || floor != 10 || !slices.Equal(acked, offsets) {
			t.Errorf("golden %s decodes to %d %v %v", c.name, floor, acked, err)
		}
	}
}
