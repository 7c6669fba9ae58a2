package wal

import (
	"encoding/hex"
	"testing"
)

// The WAL's on-disk bytes, written by the code before the shared framing (core/frame): a
// change of any of them is a format change, which takes a new format byte.
const (
	goldenKeyedFrame = "" +
		"86aa39112f0000000107000000000000007b68e5cf8b0100002a000000000000" +
		"00030000000600020000006f72646572736b3168656c6c6f"
	goldenUnkeyedFrame = "" +
		"b428d05d240000000108000000000000007c68e5cf8b0100002a000000000000" +
		"00000000000100ffffffff7400"
	goldenCheckpoint = "" +
		"cf96b0294e434b32050000000000000063000000000000005a00000000000000" +
		"01002a00000000000000030000005000000000000000"
)

func TestFormatIsUnchanged(t *testing.T) {
	keyed := Record{Seq: 7, TimestampMs: 1_700_000_000_123, Incarnation: 42, Partition: 3,
		Topic: "orders", HasKey: true, Key: []byte("k1"), Payload: []byte("hello")}
	unkeyed := Record{Seq: 8, TimestampMs: 1_700_000_000_124, Incarnation: 42, Topic: "t",
		Payload: []byte{0}}
	for _, c := range []struct {
		name   string
		rec    Record
		golden string
	}{{"keyed", keyed, goldenKeyedFrame}, {"unkeyed", unkeyed, goldenUnkeyedFrame}} {
		got := hex.EncodeToString(AppendFrame(nil, &c.rec))
		if got != c.golden {
			t.Errorf("%s frame\n got %s\nwant %s", c.name, got, c.golden)
		}
		b, _ := hex.DecodeString(c.golden)
		r, n, err := DecodeFrame(b)
		if err != nil || n != len(b) || r.Seq != c.rec.Seq || string(r.Payload) != string(c.rec.Payload) {
			t.Errorf("%s golden frame decodes to %+v, %d, %v", c.name, r, n, err)
		}
	}
	slot := checkpointSlot{gen: 5, seq: 99, skip: Skip{Below: 90,
		Pending: []SkipPending{{Incarnation: 42, Partition: 3, From: 80}}}}
	got := hex.EncodeToString(encodeCheckpointSlot(slot))
	if got != goldenCheckpoint {
		t.Errorf("checkpoint slot\n got %s\nwant %s", got, goldenCheckpoint)
	}
	b, _ := hex.DecodeString(goldenCheckpoint)
	if s, ok := decodeCheckpointSlot(b); !ok || s.gen != 5 || s.seq != 99 || s.skip.Below != 90 {
		t.Errorf("golden checkpoint slot decodes to %+v, %v", s, ok)
	}
}
