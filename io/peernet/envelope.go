package peernet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/narad/narad/core/frame"
)

// Envelope kinds.
const (
	kindOneWay   byte = 1 // a message that wants no answer
	kindRequest  byte = 2 // a request: one response comes back on the same stream
	kindResponse byte = 3
	kindError    byte = 4 // the handler's error, as text
)

const (
	envelopeFormat = 1
	headerBytes    = 4 + 4 + 1 + 1 + 8 // length | crc32c | format | kind | request id
	// BodyBytesMax bounds one envelope's body: the 16 MiB frame limit of DESIGN.md.
	BodyBytesMax = 16 << 20
)

// Errors of the envelope codec.
var (
	ErrTooLarge = fmt.Errorf("net: body over %d bytes", BodyBytesMax)
	ErrCorrupt  = errors.New("net: malformed envelope")
)

// envelope is one unit on a stream.
type envelope struct {
	kind byte
	id   uint64
	body []byte
}

// appendEnvelope encodes e: length counts what follows the length and CRC fields; the
// CRC (Castagnoli) covers format, kind, id and body.
func appendEnvelope(dst []byte, e envelope) ([]byte, error) {
	if len(e.body) > BodyBytesMax {
		return dst, ErrTooLarge
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(headerBytes-8+len(e.body)))
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = append(dst, envelopeFormat, e.kind)
	dst = binary.LittleEndian.AppendUint64(dst, e.id)
	dst = append(dst, e.body...)
	binary.LittleEndian.PutUint32(dst[start+4:], frame.Checksum(0, dst[start+8:]))
	return dst, nil
}

// readEnvelope reads one envelope, refusing a length over the bound before reading (or
// allocating for) the body.
func readEnvelope(r io.Reader) (envelope, error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return envelope{}, err
	}
	n := binary.LittleEndian.Uint32(h[:4])
	if n < headerBytes-8 || n > headerBytes-8+BodyBytesMax {
		return envelope{}, ErrCorrupt
	}
	rest, err := readGrowing(r, int(n))
	if err != nil {
		return envelope{}, err
	}
	return decodeEnvelopeRest(binary.LittleEndian.Uint32(h[4:]), rest)
}

// readChunkBytes is the buffer readGrowing starts with: most messages (raft, heartbeats,
// commit answers) fit in it.
const readChunkBytes = 16 << 10

// readGrowing reads exactly n bytes, growing its buffer (doubling, up to n) only as the
// bytes arrive: the length comes from the peer, and a claim of 16 MiB followed by silence
// must not cost 16 MiB. A short read is io.ErrUnexpectedEOF.
func readGrowing(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, readChunkBytes))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n, 2*cap(buf))-len(buf))
		}
		m, err := r.Read(buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+m]
		switch {
		case len(buf) == n:
			return buf, nil
		case err == io.EOF:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
	}
	return buf, nil
}

func decodeEnvelopeRest(crc uint32, rest []byte) (envelope, error) {
	if frame.Checksum(0, rest) != crc || rest[0] != envelopeFormat || rest[1] < kindOneWay || rest[1] > kindError {
		return envelope{}, ErrCorrupt
	}
	return envelope{kind: rest[1], id: binary.LittleEndian.Uint64(rest[2:10]), body: rest[10:]}, nil
}
