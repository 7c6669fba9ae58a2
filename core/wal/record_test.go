package wal

import (
	"bytes"
	"errors"
	"testing"
)

func sampleRecord() Record {
	return Record{Seq: 7, TimestampMs: 1700000000123, Incarnation: 42, Partition: 3,
		Topic: "orders", HasKey: true, Key: []byte("k1"), Payload: []byte(`{"a":1}`)}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, r := range []Record{sampleRecord(), {Seq: 1, Topic: "t", Payload: []byte{0}}, {Seq: 2, Topic: "t", HasKey: true, Key: []byte{}, Payload: []byte("x")}} {
		b := AppendFrame([]byte("prefix"), &r)
		got, n, err := DecodeFrame(b[6:])
		if err != nil || n != r.FrameBytes() || n != len(b)-6 {
			t.Fatalf("decode: n=%d err=%v", n, err)
		}
		if got.Seq != r.Seq || got.TimestampMs != r.TimestampMs || got.Incarnation != r.Incarnation ||
			got.Partition != r.Partition || got.Topic != r.Topic || got.HasKey != r.HasKey ||
			!bytes.Equal(got.Key, r.Key) || !bytes.Equal(got.Payload, r.Payload) {
			t.Fatalf("round trip changed the record: %+v != %+v", got, r)
		}
	}
}

func TestDecodeFrameDetectsDamage(t *testing.T) {
	r := sampleRecord()
	good := AppendFrame(nil, &r)
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		if _, _, err := DecodeFrame(b); err == nil {
			t.Fatalf("bit flip at byte %d not detected", i)
		}
	}
	if _, _, err := DecodeFrame(good[:len(good)-1]); !errors.Is(err, errShort) {
		t.Fatalf("short frame: %v", err)
	}
	if _, _, err := DecodeFrame(make([]byte, 64)); !errors.Is(err, errZero) {
		t.Fatalf("zeroed space: %v", err)
	}
}

func TestValidateLimits(t *testing.T) {
	long := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		r   Record
		err error
	}{
		{Record{Topic: "", Payload: long(1)}, ErrTopicEmpty},
		{Record{Topic: string(long(TopicBytesMax + 1)), Payload: long(1)}, ErrTopicTooLong},
		{Record{Topic: "t", Key: long(KeyBytesMax + 1), HasKey: true, Payload: long(1)}, ErrKeyTooLong},
		{Record{Topic: "t"}, ErrPayloadSize},
		{Record{Topic: "t", Payload: long(PayloadBytesMax + 1)}, ErrPayloadSize},
		{Record{Topic: string(long(TopicBytesMax)), Key: long(KeyBytesMax), HasKey: true, Payload: long(PayloadBytesMax)}, nil},
	}
	for i, c := range cases {
		if err := c.r.Validate(); !errors.Is(err, c.err) {
			t.Errorf("case %d: got %v, want %v", i, err, c.err)
		}
	}
}

// FuzzDecodeFrame: the decoder never panics, never reads past its input, and whatever it
// accepts re-encodes to exactly the bytes it read.
func FuzzDecodeFrame(f *testing.F) {
	r := sampleRecord()
	f.Add(AppendFrame(nil, &r))
	f.Add(make([]byte, 12))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, n, err := DecodeFrame(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("frame of %d bytes from %d bytes of input", n, len(b))
		}
		again := AppendFrame(nil, &got)
		if !bytes.Equal(again, b[:n]) {
			t.Fatalf("accepted a frame that does not re-encode to itself")
		}
	})
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(encodeCheckpointSlot(checkpointSlot{gen: 3, seq: 99}))
	f.Add(make([]byte, checkpointFileBytes))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := decodeCheckpointFile(b)
		if !ok {
			return
		}
		want := encodeCheckpointSlot(s)
		for off := 0; off+checkpointSlotUsed <= len(b) && off < checkpointFileBytes; off += checkpointSlotBytes {
			if bytes.Equal(want, b[off:off+checkpointSlotUsed]) {
				return
			}
		}
		t.Fatalf("accepted a slot that is in neither slot position")
	})
}
