package lease

import (
	"encoding/binary"
	"errors"
	"path"

	"github.com/narad/narad/core/frame"

	"github.com/narad/narad/core/assert"
)

// File format constants. These are on disk: do not change them; add a format byte instead.
// The layouts are drawn in doc.go.
const (
	frameHeaderBytes = frame.HeaderBytes // crc u32 | length u32 | format u8 (core/frame)
	bodyFixedBytes   = 12                // floor u64 | count (or nbits) u32
	formatAckBatch   = 1                 // a frame of acks.log (written before tags; still read)
	formatSnapshot   = 2                 // the frame of acks.snap (written before tags; still read)
	formatAckTagged  = 3                 // formatAckBatch whose CRC starts from the partition's tag
	formatSnapTagged = 4                 // formatSnapshot whose CRC starts from the partition's tag
)

// Limits of the formats. A decoder treats anything beyond them as damage.
const (
	// FrameOffsetsMax bounds the offsets of one ack-log frame (64 KiB of body). A flush
	// with more acks writes several frames in its one write.
	FrameOffsetsMax = 8192
	// AckSpanMax bounds how far above the floor an acked offset may lie, in a frame, in a
	// snapshot and in memory (Config.AckWindowMax is clamped to it). It bounds the
	// snapshot's bitmap (8 MiB) and the memory recovery may need.
	AckSpanMax = 1 << 26
	// frameBodyBytesMax is the largest ack-log frame body.
	frameBodyBytesMax = bodyFixedBytes + 8*FrameOffsetsMax
	// snapshotBodyBytesMax is the largest snapshot body.
	snapshotBodyBytesMax = bodyFixedBytes + AckSpanMax/8
)

// Decoding outcomes. Every one of them is damage to recovery (doc.go, rows L3-L5, S3).
var (
	errFormat   = errors.New("lease: unknown frame format")
	errBody     = errors.New("lease: malformed frame body")
	errTrailing = errors.New("lease: bytes after the snapshot frame")
)

// AppendAckFrame appends one ack-log frame to dst: every offset below floor is acked,
// and so is every offset of offsets. offsets must be strictly increasing, each at or
// above floor and below floor+AckSpanMax, and at most FrameOffsetsMax of them; anything
// else is a programmer error.
func AppendAckFrame(dst []byte, floor uint64, offsets []uint64) []byte {
	return AppendAckFrameFor(dst, "", floor, offsets)
}

// AppendAckFrameFor is AppendAckFrame for the partition whose ack directory is dir: the
// frame's CRC starts from the directory's tag (format 3), so that a frame of another
// partition, which a misdirected write can land in this partition's acks.log whole and
// valid (node seed 44 of narad-sim), fails its check here. dir "" writes format 1.
func AppendAckFrameFor(dst []byte, dir string, floor uint64, offsets []uint64) []byte {
	assert.That(len(offsets) <= FrameOffsetsMax, "lease: ack frame over FrameOffsetsMax")
	for i, o := range offsets {
		assert.That(
			o >= floor && o-floor < AckSpanMax,
			"lease: ack frame offset outside [floor, floor+AckSpanMax)",
		)
		assert.That(i == 0 || o > offsets[i-1], "lease: ack frame offsets not strictly increasing")
	}
	format := byte(formatAckBatch)
	if dir != "" {
		format = formatAckTagged
	}
	start := len(dst)
	dst, body := frame.Append(dst, format, bodyFixedBytes+8*len(offsets))
	binary.LittleEndian.PutUint64(body[0:], floor)
	binary.LittleEndian.PutUint32(body[8:], uint32(len(offsets)))
	for i, o := range offsets {
		binary.LittleEndian.PutUint64(body[bodyFixedBytes+8*i:], o)
	}
	frame.Seal(dst[start:], tagSeed(dir))
	return dst
}

// DecodeAckFrame decodes the ack-log frame at the start of b. It returns the frame's
// floor, its offsets (a fresh slice) and its size, or an error saying why b does not
// start with a valid frame. It never panics, whatever b holds.
func DecodeAckFrame(b []byte) (floor uint64, offsets []uint64, n int, err error) {
	return DecodeAckFrameFor(b, "")
}

// DecodeAckFrameFor is DecodeAckFrame in the partition whose ack directory is dir: it
// accepts format 1 and format 3 frames of that partition ("": format 1 only).
func DecodeAckFrameFor(b []byte, dir string) (floor uint64, offsets []uint64, n int, err error) {
	body, n, err := frameBody(b, dir, formatAckBatch, formatAckTagged, frameBodyBytesMax)
	if err != nil {
		return 0, nil, 0, err
	}
	floor = binary.LittleEndian.Uint64(body[0:])
	count := binary.LittleEndian.Uint32(body[8:])
	if count > FrameOffsetsMax || len(body) != bodyFixedBytes+8*int(count) {
		return 0, nil, 0, errBody
	}
	offsets = make([]uint64, count)
	for i := range offsets {
		o := binary.LittleEndian.Uint64(body[bodyFixedBytes+8*i:])
		if o < floor || o-floor >= AckSpanMax || (i > 0 && o <= offsets[i-1]) {
			return 0, nil, 0, errBody
		}
		offsets[i] = o
	}
	return floor, offsets, n, nil
}

// frameBody checks the header, length and CRC of the frame at the start of b and returns
// its body and its size. A frame of the tagged format is checked from dir's tag.
func frameBody(b []byte, dir string, format, tagged byte, bodyMax int) ([]byte, int, error) {
	h, err := frame.Peek(b, frame.Bounds{Min: bodyFixedBytes, Max: bodyMax})
	if err != nil {
		return nil, 0, err
	}
	seed := uint32(0)
	if h.Format == tagged && dir != "" {
		seed = tagSeed(dir)
	}
	body, err := h.Body(b, seed)
	if err != nil {
		return nil, 0, err
	}
	if h.Format != format && (h.Format != tagged || dir == "") {
		return nil, 0, errFormat
	}
	return body, h.Size, nil
}

// tagSeed is the CRC a tagged frame's checksum starts from: that of its partition's tag,
// the last element of its ack directory (topic id and partition index, unique on a disk).
// An untagged frame starts from 0, a plain CRC.
func tagSeed(dir string) uint32 {
	if dir == "" {
		return 0
	}
	return frame.Checksum(0, []byte(path.Base(dir)))
}

// snapshotView is a decoded snapshot: the bitmap aliases the bytes it was decoded from.
type snapshotView struct {
	floor  uint64
	nbits  int
	bitmap []byte // bit i (byte i/8, bit i%8): offset floor+i is acked
}

func (v snapshotView) bit(i int) bool { return v.bitmap[i/8]&(1<<(i%8)) != 0 }

// encodeSnapshot returns the whole acks.snap file for the set: one frame.
func encodeSnapshot(s *ackSet, dir string) []byte {
	floor := s.floor
	nbits := 0
	if hi, ok := s.highest(); ok {
		nbits = int(hi-floor) + 1
	}
	assert.That(nbits <= AckSpanMax, "lease: snapshot over AckSpanMax")
	format := byte(formatSnapshot)
	if dir != "" {
		format = formatSnapTagged
	}
	f, body := frame.Append(nil, format, bodyFixedBytes+(nbits+7)/8)
	clear(body) // the bitmap is set bit by bit below
	binary.LittleEndian.PutUint64(body[0:], floor)
	binary.LittleEndian.PutUint32(body[8:], uint32(nbits))
	bitmap := body[bodyFixedBytes:]
	s.each(func(o uint64) {
		i := o - floor
		bitmap[i/8] |= 1 << (i % 8)
	})
	frame.Seal(f, tagSeed(dir))
	return f
}

// decodeSnapshot decodes a whole acks.snap file. The bitmap must be canonical: no bit past
// nbits, and the last bit set when nbits > 0; the file holds nothing after the frame.
func decodeSnapshot(b []byte, dir string) (snapshotView, error) {
	body, n, err := frameBody(b, dir, formatSnapshot, formatSnapTagged, snapshotBodyBytesMax)
	if err != nil {
		return snapshotView{}, err
	}
	if n != len(b) {
		return snapshotView{}, errTrailing
	}
	v := snapshotView{floor: binary.LittleEndian.Uint64(body[0:]), bitmap: body[bodyFixedBytes:]}
	nbits := binary.LittleEndian.Uint32(body[8:])
	if nbits > AckSpanMax || len(v.bitmap) != (int(nbits)+7)/8 {
		return snapshotView{}, errBody
	}
	v.nbits = int(nbits)
	if v.nbits > 0 && !v.bit(v.nbits-1) {
		return snapshotView{}, errBody
	}
	if r := v.nbits % 8; r != 0 && v.bitmap[len(v.bitmap)-1]>>r != 0 {
		return snapshotView{}, errBody
	}
	return v, nil
}

// EncodeSnapshot returns an acks.snap file holding floor and the acked offsets above it
// (strictly increasing, each at or above floor and below floor+AckSpanMax). Tools and
// tests use it; the Manager encodes its own set.
func EncodeSnapshot(
	floor uint64,
	acked []uint64,
) []byte {
	return EncodeSnapshotFor("", floor, acked)
}

// EncodeSnapshotFor is EncodeSnapshot for the partition whose ack directory is dir
// (format 4; "": format 2).
func EncodeSnapshotFor(dir string, floor uint64, acked []uint64) []byte {
	s := newAckSet(floor)
	for i, o := range acked {
		assert.That(
			o >= floor && o-floor < AckSpanMax,
			"lease: snapshot offset outside [floor, floor+AckSpanMax)",
		)
		assert.That(i == 0 || o > acked[i-1], "lease: snapshot offsets not strictly increasing")
		s.setBit(o)
	}
	return encodeSnapshot(s, dir)
}

// DecodeSnapshot decodes a whole acks.snap file into its floor and the acked offsets above
// it, in increasing order. It never panics, whatever b holds.
func DecodeSnapshot(b []byte) (floor uint64, acked []uint64, err error) {
	return DecodeSnapshotFor(b, "")
}

// DecodeSnapshotFor is DecodeSnapshot in the partition whose ack directory is dir.
func DecodeSnapshotFor(b []byte, dir string) (floor uint64, acked []uint64, err error) {
	v, err := decodeSnapshot(b, dir)
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i < v.nbits; i++ {
		if v.bit(i) {
			acked = append(acked, v.floor+uint64(i))
		}
	}
	return v.floor, acked, nil
}

// findResync looks in b, from index from on, for the start of a valid ack-log frame and
// returns its index, or -1. A cheap header filter runs before the CRC.
func findResync(b []byte, from int, dir string) int {
	for q := from; q+frameHeaderBytes+bodyFixedBytes <= len(b); q++ {
		if b[q+8] != formatAckBatch && b[q+8] != formatAckTagged {
			continue
		}
		bodyLen := binary.LittleEndian.Uint32(b[q+4:])
		if bodyLen < bodyFixedBytes || bodyLen > frameBodyBytesMax ||
			int(bodyLen) > len(b)-q-frameHeaderBytes {
			continue
		}
		if count := binary.LittleEndian.Uint32(b[q+frameHeaderBytes+8:]); uint64(
			bodyLen,
		) != bodyFixedBytes+8*uint64(
			count,
		) {
			continue
		}
		if _, _, _, err := DecodeAckFrameFor(b[q:], dir); err == nil {
			return q
		}
	}
	return -1
}
