package plog_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/narad/narad/core/plog"
)

func sampleEntries() []plog.Entry {
	return []plog.Entry{
		{HasKey: true, Key: []byte("k1"), Payload: []byte(`{"a":1}`)},
		{Payload: []byte("no key")},
		{HasKey: true, Key: []byte{}, Payload: nil}, // an empty key differs from none
	}
}

func TestBatchRoundTrip(t *testing.T) {
	es := sampleEntries()
	b := plog.AppendBatch([]byte("prefix"), 42, 1700000000123, es)
	n, err := plog.BatchBytes(es)
	if err != nil || n != len(b)-6 {
		t.Fatalf("BatchBytes %d %v, frame %d", n, err, len(b)-6)
	}
	bt, m, err := plog.DecodeBatch(b[6:])
	if err != nil || m != n || bt.BaseOffset != 42 || bt.CommitTimeMs != 1700000000123 || len(bt.Entries) != 3 {
		t.Fatalf("decode: %+v n=%d err=%v", bt, m, err)
	}
	for i, e := range bt.Entries {
		w := es[i]
		if e.HasKey != w.HasKey || !bytes.Equal(e.Key, w.Key) || !bytes.Equal(e.Payload, w.Payload) {
			t.Fatalf("entry %d: %+v != %+v", i, e, w)
		}
	}
}

// A tagged batch decodes only in its own partition; an untagged one (written before
// tags) in any.
func TestTaggedBatchesBelongToTheirPartition(t *testing.T) {
	const a, b = "parts/000000000000002a-3", "parts/000000000000002a-4"
	f := plog.AppendBatchFor(nil, a, 42, 9, sampleEntries())
	if bt, n, err := plog.DecodeBatchFor(f, a); err != nil || n != len(f) || bt.BaseOffset != 42 {
		t.Fatalf("own batch: %+v %d %v", bt, n, err)
	}
	for _, dir := range []string{b, ""} {
		if _, _, err := plog.DecodeBatchFor(f, dir); err == nil {
			t.Fatalf("batch of %s decoded in %q", a, dir)
		}
	}
	if _, _, err := plog.DecodeBatchFor(plog.AppendBatch(nil, 42, 9, sampleEntries()), b); err != nil {
		t.Fatalf("untagged batch: %v", err)
	}
}

// The layout drawn in doc.go, byte for byte.
func TestBatchLayout(t *testing.T) {
	b := plog.AppendBatch(nil, 7, 9, []plog.Entry{{HasKey: true, Key: []byte("k"), Payload: []byte("pp")}})
	le := binary.LittleEndian
	if len(b) != 29+8+1+2 || le.Uint32(b[4:]) != uint32(len(b)-9) || b[8] != 1 ||
		le.Uint64(b[9:]) != 7 || le.Uint32(b[17:]) != 1 || le.Uint64(b[21:]) != 9 ||
		le.Uint32(b[29:]) != 1 || le.Uint32(b[33:]) != 2 || string(b[37:]) != "kpp" {
		t.Fatalf("layout % x", b)
	}
	if le.Uint32(b[0:]) != crc32.Checksum(b[4:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("crc32c does not cover length..end")
	}
}

func TestDecodeBatchDetectsEveryBitFlip(t *testing.T) {
	good := plog.AppendBatch(nil, 3, 5, sampleEntries())
	for i := range good {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			if _, _, err := plog.DecodeBatch(b); err == nil {
				t.Fatalf("flip of bit %d of byte %d not detected", bit, i)
			}
		}
	}
	for n := 0; n < len(good); n++ {
		if _, _, err := plog.DecodeBatch(good[:n]); err == nil {
			t.Fatalf("truncated frame of %d bytes accepted", n)
		}
	}
	if _, _, err := plog.DecodeBatch(make([]byte, 64)); err == nil {
		t.Fatalf("zeroed space accepted")
	}
}

// FuzzDecodeBatch: the decoder never panics, and a frame it accepts is exactly what the
// encoder writes for the batch it returns (so a corrupt frame cannot decode to a batch
// that differs from its bytes).
func FuzzDecodeBatch(f *testing.F) {
	f.Add(plog.AppendBatch(nil, 0, 0, []plog.Entry{{}}))
	f.Add(plog.AppendBatch(nil, 1<<40, 1700000000000, sampleEntries()))
	f.Add(append(plog.AppendBatch(nil, 9, 9, sampleEntries()), 0xff, 0x00))
	f.Add(make([]byte, 40))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		bt, n, err := plog.DecodeBatch(b)
		if err != nil {
			return
		}
		if n < 0 || n > len(b) || n > plog.BatchBytesMax {
			t.Fatalf("frame size %d of %d bytes", n, len(b))
		}
		if len(bt.Entries) == 0 || len(bt.Entries) > plog.EntriesMax {
			t.Fatalf("%d entries", len(bt.Entries))
		}
		if _, err := plog.BatchBytes(bt.Entries); err != nil {
			t.Fatalf("decoded a batch beyond the limits: %v", err)
		}
		again := plog.AppendBatch(nil, bt.BaseOffset, bt.CommitTimeMs, bt.Entries)
		if !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoding differs:\n% x\n% x", again, b[:n])
		}
	})
}
