package plog

import (
	"encoding/hex"
	"testing"
)

// A batch frame as written by the code before the shared framing (core/frame): a change of
// its bytes is a format change, which takes a new format byte.
const goldenBatch = "" +
	"b9fcfab23d000000016400000000000000030000007b68e5cf8b010000020000" +
	"00050000006b3168656c6c6fffffffff01000000780000000009000000656d70" +
	"7479206b6579"

func TestFormatIsUnchanged(t *testing.T) {
	entries := []Entry{
		{HasKey: true, Key: []byte("k1"), Payload: []byte("hello")},
		{Payload: []byte("x")},
		{HasKey: true, Payload: []byte("empty key")},
	}
	got := hex.EncodeToString(AppendBatch(nil, 100, 1_700_000_000_123, entries))
	if got != goldenBatch {
		t.Errorf("batch frame\n got %s\nwant %s", got, goldenBatch)
	}
	b, _ := hex.DecodeString(goldenBatch)
	bt, n, err := DecodeBatch(b)
	if err != nil || n != len(b) || bt.BaseOffset != 100 || len(bt.Entries) != 3 ||
		string(bt.Entries[0].Key) != "k1" || bt.Entries[1].HasKey || !bt.Entries[2].HasKey {
		t.Errorf("golden batch decodes to %+v, %d, %v", bt, n, err)
	}
}
