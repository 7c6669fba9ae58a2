package plog

import (
	"encoding/hex"
	"testing"
)

// A batch frame as written by the code before the shared framing (core/frame), and the
// same batch tagged with its partition (format 2): a change of their bytes is a format
// change, which takes a new format byte.
const (
	goldenBatch = "" +
		"b9fcfab23d000000016400000000000000030000007b68e5cf8b010000020000" +
		"00050000006b3168656c6c6fffffffff01000000780000000009000000656d70" +
		"7479206b6579"
	goldenBatchTagged = "" +
		"ffd78e193d000000026400000000000000030000007b68e5cf8b010000020000" +
		"00050000006b3168656c6c6fffffffff01000000780000000009000000656d70" +
		"7479206b6579"
)

const goldenDir = "parts/000000000000002a-3"

func TestFormatIsUnchanged(t *testing.T) {
	entries := []Entry{
		{HasKey: true, Key: []byte("k1"), Payload: []byte("hello")},
		{Payload: []byte("x")},
		{HasKey: true, Payload: []byte("empty key")},
	}
	for _, c := range []struct{ name, dir, golden string }{
		{"batch frame", "", goldenBatch},
		{"tagged batch frame", goldenDir, goldenBatchTagged},
	} {
		got := hex.EncodeToString(AppendBatchFor(nil, c.dir, 100, 1_700_000_000_123, entries))
		if got != c.golden {
			t.Errorf("%s\n got %s\nwant %s", c.name, got, c.golden)
		}
		b, _ := hex.DecodeString(c.golden)
		bt, n, err := DecodeBatchFor(b, c.dir)
		if err != nil || n != len(b) || bt.BaseOffset != 100 || len(bt.Entries) != 3 ||
			string(bt.Entries[0].Key) != "k1" || bt.Entries[1].HasKey || !bt.Entries[2].HasKey {
			t.Errorf("golden %s decodes to %+v, %d, %v", c.name, bt, n, err)
		}
	}
}
