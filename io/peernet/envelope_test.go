package peernet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, e := range []envelope{{kindOneWay, 0, nil}, {kindRequest, 7, []byte("ping")}, {kindError, 1 << 60, []byte("no")}} {
		b, err := appendEnvelope(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readEnvelope(bytes.NewReader(b))
		if err != nil || got.kind != e.kind || got.id != e.id || !bytes.Equal(got.body, e.body) {
			t.Fatalf("%+v -> %+v %v", e, got, err)
		}
		for i := range b { // every single-byte change is caught
			c := bytes.Clone(b)
			c[i] ^= 0x10
			if got, err := readEnvelope(bytes.NewReader(c)); err == nil {
				t.Fatalf("byte %d changed, still read as %+v", i, got)
			}
		}
	}
	if _, err := appendEnvelope(nil, envelope{kind: kindOneWay, body: make([]byte, BodyBytesMax+1)}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("17 MiB body: %v", err)
	}
}

// A length over the bound is refused from the 8 header bytes alone.
func TestEnvelopeLengthRefusedBeforeReading(t *testing.T) {
	h := []byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}
	if _, err := readEnvelope(io.MultiReader(bytes.NewReader(h), failReader{})); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("2 GiB length: %v", err)
	}
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { panic("read past the header") }

func FuzzReadEnvelope(f *testing.F) {
	b, _ := appendEnvelope(nil, envelope{kind: kindRequest, id: 3, body: []byte("body")})
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := readEnvelope(bytes.NewReader(b))
		if err != nil {
			return
		}
		again, err := appendEnvelope(nil, e)
		if err != nil || !bytes.Equal(again, b[:len(again)]) {
			t.Fatalf("read %+v from %x, which encodes to %x", e, b, again)
		}
	})
}

// A length within the bound but a body that never comes costs little: the buffer grows
// with the bytes that arrive, not with the length claimed.
func TestEnvelopeBufferGrowsWithBytes(t *testing.T) {
	h := binary.LittleEndian.AppendUint32(nil, headerBytes-8+BodyBytesMax)
	h = append(h, make([]byte, 4+100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readEnvelope(bytes.NewReader(h))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short body: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reading 100 bytes of a claimed 16 MiB body allocated %d bytes", got)
	}
	// A full body arrives in pieces and reads back whole.
	body := bytes.Repeat([]byte("0123456789abcdef"), 100_000)
	b, err := appendEnvelope(nil, envelope{kind: kindOneWay, body: body})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readEnvelope(iotest.HalfReader(bytes.NewReader(b)))
	if err != nil || !bytes.Equal(got.body, body) {
		t.Fatalf("a 1.6 MB body read in pieces: %d bytes, %v", len(got.body), err)
	}
}
