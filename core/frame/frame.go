package frame

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"

	"github.com/narad/narad/core/assert"
)

// HeaderBytes is the size of a frame's header: crc u32 | length u32 | format u8.
const HeaderBytes = 9

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Decoding outcomes (see the package doc).
var (
	ErrZero     = errors.New("frame: zeroed header (never-written space)")
	ErrShort    = errors.New("frame: extends past the data")
	ErrLength   = errors.New("frame: length out of range")
	ErrChecksum = errors.New("frame: checksum mismatch")
)

// Bounds are the body lengths a reader accepts, Min and Max included.
type Bounds struct{ Min, Max int }

// Header is what a frame's first HeaderBytes say, once its length is within bounds.
type Header struct {
	Format byte
	Size   int // the whole frame: HeaderBytes plus the body length
}

// Checksum continues the CRC-32C seed over b: Checksum(0, b) is b's plain CRC-32C.
func Checksum(seed uint32, b []byte) uint32 { return crc32.Update(seed, castagnoli, b) }

// IsZero reports whether every byte of b is zero (never-written space).
func IsZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Append appends the header of a frame of format with a body of bodyLen bytes and room for
// the body, and returns the extended slice and the body to fill. The caller fills every byte
// of the body, then seals the frame (Seal). A zero format or a negative length is a
// programmer error.
func Append(dst []byte, format byte, bodyLen int) (out, body []byte) {
	assert.That(format != 0 && bodyLen >= 0 && uint64(bodyLen) <= 1<<32-1,
		"frame: Append of format 0 or a length out of u32")
	start := len(dst)
	dst = slices.Grow(dst, HeaderBytes+bodyLen)[:start+HeaderBytes+bodyLen]
	f := dst[start:]
	binary.LittleEndian.PutUint32(f[4:], uint32(bodyLen))
	f[8] = format
	return dst, f[HeaderBytes:]
}

// Seal writes the checksum of f, one whole frame whose length and format Append wrote,
// starting from seed.
func Seal(f []byte, seed uint32) {
	binary.LittleEndian.PutUint32(f[0:], Checksum(seed, f[4:]))
}

// Peek reads the header at the start of b. It fails with ErrZero when the header is all
// zero (or b is shorter than a header and all zero), ErrShort when b is shorter than a
// header, and ErrLength when the body length is outside bounds. It does not look at the
// body or the checksum (Header.Body does), so a reader can size a read from it.
func Peek(b []byte, bounds Bounds) (Header, error) {
	if len(b) < HeaderBytes {
		if IsZero(b) {
			return Header{}, ErrZero
		}
		return Header{}, ErrShort
	}
	if IsZero(b[:HeaderBytes]) {
		return Header{}, ErrZero
	}
	bodyLen := uint64(binary.LittleEndian.Uint32(b[4:]))
	if bodyLen < uint64(max(bounds.Min, 0)) || bodyLen > uint64(max(bounds.Max, 0)) {
		return Header{}, ErrLength
	}
	return Header{Format: b[8], Size: HeaderBytes + int(bodyLen)}, nil
}

// Body checks that b, starting with the frame h was peeked from, holds the whole frame
// (ErrShort) and that its checksum from seed holds (ErrChecksum), and returns the body,
// aliasing b.
func (h Header) Body(b []byte, seed uint32) ([]byte, error) {
	if len(b) < h.Size {
		return nil, ErrShort
	}
	if Checksum(seed, b[4:h.Size]) != binary.LittleEndian.Uint32(b[0:]) {
		return nil, ErrChecksum
	}
	return b[HeaderBytes:h.Size], nil
}

// Read is Peek then Body with seed 0: the frame at the start of b, its format, its body
// (aliasing b) and its size.
func Read(b []byte, bounds Bounds) (Header, []byte, error) {
	h, err := Peek(b, bounds)
	if err != nil {
		return Header{}, nil, err
	}
	body, err := h.Body(b, 0)
	if err != nil {
		return Header{}, nil, err
	}
	return h, body, nil
}
