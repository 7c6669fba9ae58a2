package frame_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/narad/narad/core/frame"
	"pgregory.net/rapid"
)

var anyLength = frame.Bounds{Min: 0, Max: 1 << 20}

func build(format byte, body []byte, seed uint32) []byte {
	b, fb := frame.Append(nil, format, len(body))
	copy(fb, body)
	frame.Seal(b, seed)
	return b
}

// TestLayout checks the bytes against the layout drawn in doc.go, with an independent CRC.
func TestLayout(t *testing.T) {
	b := build(7, []byte("abc"), 0)
	if len(b) != frame.HeaderBytes+3 || binary.LittleEndian.Uint32(b[4:]) != 3 || b[8] != 7 ||
		string(b[9:]) != "abc" {
		t.Fatalf("frame % x", b)
	}
	if binary.LittleEndian.Uint32(b[0:]) != crc32.Checksum(b[4:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatal("crc is not CRC-32C of length..end")
	}
	seeded := build(7, []byte("abc"), 0x1234)
	if bytes.Equal(seeded, b) || frame.Checksum(0x1234, b[4:]) != binary.LittleEndian.Uint32(seeded[0:]) {
		t.Fatal("a seeded frame's crc does not start from its seed")
	}
}

// TestOutcomes walks every decoding outcome of doc.go's table.
func TestOutcomes(t *testing.T) {
	good := build(1, []byte("hello"), 0)
	cases := []struct {
		name   string
		b      []byte
		bounds frame.Bounds
		want   error
	}{
		{"whole", good, anyLength, nil},
		{"empty", nil, anyLength, frame.ErrZero},
		{"zero tail shorter than a header", make([]byte, 4), anyLength, frame.ErrZero},
		{"zero header", make([]byte, 64), anyLength, frame.ErrZero},
		{"torn header", good[:5], anyLength, frame.ErrShort},
		{"torn body", good[:len(good)-1], anyLength, frame.ErrShort},
		{"body under Min", good, frame.Bounds{Min: 6, Max: 10}, frame.ErrLength},
		{"body over Max", good, frame.Bounds{Min: 0, Max: 4}, frame.ErrLength},
		{"flipped body bit", flip(good, 10), anyLength, frame.ErrChecksum},
		{"flipped format", flip(good, 8), anyLength, frame.ErrChecksum},
		{"flipped crc", flip(good, 0), anyLength, frame.ErrChecksum},
	}
	for _, c := range cases {
		h, body, err := frame.Read(c.b, c.bounds)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if c.want == nil && (h.Format != 1 || h.Size != len(good) || string(body) != "hello") {
			t.Errorf("%s: read %+v %q", c.name, h, body)
		}
	}
	h, err := frame.Peek(good[:frame.HeaderBytes], anyLength)
	if err != nil || h.Size != len(good) {
		t.Fatalf("Peek of a header alone: %+v %v", h, err)
	}
	if _, err := h.Body(good, 99); !errors.Is(err, frame.ErrChecksum) {
		t.Fatalf("a plain frame checked from another seed: %v", err)
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x10
	return c
}

// TestAppendExtendsInPlace: frames appended one after another read back in order.
func TestAppendExtendsInPlace(t *testing.T) {
	var b []byte
	for i := range 3 {
		start := len(b)
		var body []byte
		b, body = frame.Append(b, byte(i+1), i)
		for j := range body {
			body[j] = byte(j)
		}
		frame.Seal(b[start:], 0)
	}
	for i := range 3 {
		h, body, err := frame.Read(b, anyLength)
		if err != nil || h.Format != byte(i+1) || len(body) != i {
			t.Fatalf("frame %d: %+v %v", i, h, err)
		}
		b = b[h.Size:]
	}
}

// TestRoundTripAndDamage (rapid): any frame reads back whole from any seed, and a flipped
// bit outside the length field is always ErrChecksum (CRC-32C catches every 1-bit error).
func TestRoundTripAndDamage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		format := rapid.ByteRange(1, 255).Draw(t, "format")
		body := rapid.SliceOfN(rapid.Byte(), 0, 512).Draw(t, "body")
		seed := rapid.Uint32().Draw(t, "seed")
		tail := rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "tail")
		b := append(build(format, body, seed), tail...)
		h, err := frame.Peek(b, anyLength)
		if err != nil {
			t.Fatalf("peek: %v", err)
		}
		got, err := h.Body(b, seed)
		if err != nil || h.Format != format || h.Size != frame.HeaderBytes+len(body) || !bytes.Equal(got, body) {
			t.Fatalf("read back %+v %v", h, err)
		}
		i := rapid.IntRange(0, h.Size-1).Filter(func(i int) bool { return i < 4 || i >= 8 }).Draw(t, "at")
		bit := rapid.IntRange(0, 7).Draw(t, "bit")
		b[i] ^= 1 << bit
		if frame.IsZero(b[:frame.HeaderBytes]) {
			return // the flip made a zero header: ErrZero, also a refusal
		}
		if _, err := h.Body(b, seed); !errors.Is(err, frame.ErrChecksum) {
			t.Fatalf("flip of bit %d at %d: %v", bit, i, err)
		}
	})
}

// FuzzRead is the framing's fuzz test: whatever the bytes and bounds, Read never panics, a
// frame it accepts lies within b and the bounds and re-encodes to the same bytes, and an
// error is one of the four outcomes.
func FuzzRead(f *testing.F) {
	f.Add(build(1, []byte("hello"), 0), 0, 64)
	f.Add(make([]byte, 12), 0, 64)
	f.Add([]byte{1, 2, 3}, 1, 2)
	f.Fuzz(func(t *testing.T, b []byte, lo, hi int) {
		bounds := frame.Bounds{Min: lo, Max: hi}
		h, body, err := frame.Read(b, bounds)
		if err != nil {
			for _, want := range []error{frame.ErrZero, frame.ErrShort, frame.ErrLength, frame.ErrChecksum} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("unknown outcome %v", err)
		}
		if h.Size > len(b) || len(body) < lo || len(body) > hi || h.Size != frame.HeaderBytes+len(body) {
			t.Fatalf("accepted %+v with a body of %d bytes from %d bytes, bounds %+v", h, len(body), len(b), bounds)
		}
		if h.Format != 0 {
			if again := build(h.Format, body, 0); !bytes.Equal(again, b[:h.Size]) {
				t.Fatalf("accepted frame re-encodes differently")
			}
		}
	})
}
