package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/narad/narad/core/frame"
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
	f.Add(encodeCheckpointSlot(checkpointSlot{gen: 3, seq: 99, v1: true}))
	f.Add(encodeCheckpointSlot(checkpointSlot{gen: 3, seq: 99}))
	f.Add(encodeCheckpointSlot(checkpointSlot{gen: 4, seq: 7, skip: Skip{Below: 20, Pending: []SkipPending{
		{Incarnation: 1, Partition: 0, From: 7}, {Incarnation: 1, Partition: 2, From: 9}}}}))
	f.Add(EncodeCheckpointFileSkip(5, Skip{Below: 6}))
	f.Add(make([]byte, checkpointFileBytes))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := decodeCheckpointFile(b)
		if !ok {
			return
		}
		if !s.skip.Valid() {
			t.Fatalf("accepted an invalid skip %+v", s.skip)
		}
		if s.v1 && (s.skip.Below != 0 || len(s.skip.Pending) != 0) {
			t.Fatalf("a format 1 slot decoded with a skip")
		}
		want := encodeCheckpointSlot(s)
		if len(want) > checkpointSlotBytes {
			t.Fatalf("a slot of %d bytes", len(want))
		}
		for off := 0; off+len(want) <= len(b) && off < checkpointFileBytes; off += checkpointSlotBytes {
			if bytes.Equal(want, b[off:off+len(want)]) {
				return
			}
		}
		t.Fatalf("accepted a slot that is in neither slot position")
	})
}

// TestCheckpointSlotFormats: both formats round-trip, format 2 at its pending bound fits
// a slot, and each format's crc covers all of its used bytes.
func TestCheckpointSlotFormats(t *testing.T) {
	full := Skip{Below: 1 << 40}
	for i := range CheckpointPendingMax {
		full.Pending = append(full.Pending, SkipPending{Incarnation: 7, Partition: uint32(i), From: uint64(i) + 3})
	}
	for _, s := range []checkpointSlot{
		{gen: 1, seq: 5, v1: true},
		{gen: 2, seq: 5},
		{gen: 3, seq: 5, skip: Skip{Below: 9, Pending: []SkipPending{{Incarnation: 2, Partition: 1, From: 6}}}},
		{gen: 4, seq: 5, skip: full},
	} {
		b := encodeCheckpointSlot(s)
		if len(b) > checkpointSlotBytes {
			t.Fatalf("slot of %d bytes", len(b))
		}
		got, ok := decodeCheckpointSlot(b)
		if !ok || got.gen != s.gen || got.seq != s.seq || got.v1 != s.v1 || !got.skip.Equal(s.skip) {
			t.Fatalf("round trip of %+v gave %+v %v", s, got, ok)
		}
		for i := range b {
			c := bytes.Clone(b)
			c[i] ^= 0x10
			if _, ok := decodeCheckpointSlot(c); ok {
				t.Fatalf("format v1=%v: a flip at byte %d of %d went unnoticed", s.v1, i, len(b))
			}
		}
	}
	over := full
	over.Pending = append(slices.Clone(full.Pending), SkipPending{Incarnation: 8, From: 1})
	if over.Valid() {
		t.Fatalf("a skip past CheckpointPendingMax is valid")
	}
}

// TestSkipDone: the Skip's claim, record by record.
func TestSkipDone(t *testing.T) {
	s := Skip{Below: 10, Pending: []SkipPending{{Incarnation: 1, Partition: 2, From: 6}, {Incarnation: 3, Partition: 0, From: 4}}}
	for _, c := range []struct {
		inc  uint64
		part uint32
		seq  uint64
		done bool
	}{
		{1, 1, 5, true}, {1, 1, 9, true}, {1, 1, 10, false}, // not pending: done below Below
		{1, 2, 5, true}, {1, 2, 6, false}, {1, 2, 9, false}, // pending from 6
		{3, 0, 3, true}, {3, 0, 4, false}, {3, 0, 11, false},
	} {
		r := Record{Incarnation: c.inc, Partition: c.part, Seq: c.seq}
		if got := s.Done(&r); got != c.done {
			t.Fatalf("Done(%d/%d seq %d) = %v", c.inc, c.part, c.seq, got)
		}
	}
	if (Skip{}).Done(&Record{Seq: 1}) {
		t.Fatalf("the zero Skip claims a record")
	}
}

// FuzzDecodeCheckpointV2Body: random format 2 slot bodies with a correct crc, so that the
// fuzzer reaches the checks behind it. A slot is either refused or valid, and then it
// re-encodes to its own bytes.
func FuzzDecodeCheckpointV2Body(f *testing.F) {
	f.Add(encodeCheckpointSlot(checkpointSlot{gen: 4, seq: 7, skip: Skip{Below: 20, Pending: []SkipPending{
		{Incarnation: 1, Partition: 0, From: 7}, {Incarnation: 1, Partition: 2, From: 9}}}})[8:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		b := make([]byte, 8, 8+len(body))
		binary.LittleEndian.PutUint32(b[4:], checkpointMagicV2)
		b = append(b, body...)
		if len(b) > checkpointSlotBytes {
			b = b[:checkpointSlotBytes]
		}
		for used := checkpointV2Fixed; used <= len(b); used += checkpointV2Pending {
			binary.LittleEndian.PutUint32(b[0:], frame.Checksum(0, b[4:used]))
			s, ok := decodeCheckpointSlot(b)
			if !ok {
				continue
			}
			if !s.skip.Valid() || s.v1 {
				t.Fatalf("accepted %+v", s)
			}
			if want := encodeCheckpointSlot(s); !bytes.Equal(want, b[:len(want)]) {
				t.Fatalf("accepted a slot that does not re-encode to itself")
			}
		}
	})
}
