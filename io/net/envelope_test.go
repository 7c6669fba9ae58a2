package net

import (
	"bytes"
	"errors"
	"io"
	"testing"
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
