package wal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/frame"
)

// Record format constants. These are on-disk: do not change them; add a new format byte.
const (
	formatV1         = 1                 // the only record format so far
	frameHeaderBytes = frame.HeaderBytes // crc u32 | length u32 | format u8 (core/frame)
	bodyFixedBytes   = 34                // seq, time, incarnation, partition, topic and key lengths
	noKey            = 0xFFFFFFFF
)

// Limits on a record's fields. A record over any of them is refused by Append.
const (
	TopicBytesMax   = 200
	KeyBytesMax     = 4096
	PayloadBytesMax = 1 << 20
	// FrameBytesMax bounds one encoded frame; recovery treats a larger length as damage.
	FrameBytesMax = frameHeaderBytes + bodyFixedBytes + TopicBytesMax + KeyBytesMax + PayloadBytesMax
)

// frameBounds are the body lengths a record frame may have.
var frameBounds = frame.Bounds{Min: bodyFixedBytes, Max: FrameBytesMax - frameHeaderBytes}

// Record is one accepted message as the ingress WAL stores it.
type Record struct {
	Seq         uint64 // assigned by the WAL on append
	TimestampMs int64  // accept time, Unix milliseconds
	Incarnation uint64 // the topic's incarnation id at accept time
	Partition   uint32 // target partition resolved at accept time
	Topic       string
	HasKey      bool
	Key         []byte
	Payload     []byte
}

// Validation errors returned for a record that cannot be stored.
var (
	ErrTopicEmpty   = errors.New("wal: empty topic")
	ErrTopicTooLong = fmt.Errorf("wal: topic longer than %d bytes", TopicBytesMax)
	ErrKeyTooLong   = fmt.Errorf("wal: key longer than %d bytes", KeyBytesMax)
	ErrPayloadSize  = fmt.Errorf("wal: payload must be 1 to %d bytes", PayloadBytesMax)
)

// Validate reports why r cannot be stored, or nil.
func (r *Record) Validate() error {
	switch {
	case len(r.Topic) == 0:
		return ErrTopicEmpty
	case len(r.Topic) > TopicBytesMax:
		return ErrTopicTooLong
	case len(r.Key) > KeyBytesMax:
		return ErrKeyTooLong
	case len(r.Payload) == 0 || len(r.Payload) > PayloadBytesMax:
		return ErrPayloadSize
	}
	return nil
}

// FrameBytes is the encoded size of r.
func (r *Record) FrameBytes() int {
	return frameHeaderBytes + bodyFixedBytes + len(r.Topic) + len(r.Key) + len(r.Payload)
}

// AppendFrame appends r's frame to dst and returns the extended slice.
// The record must be valid (see Validate); an invalid one is a programmer error.
func AppendFrame(dst []byte, r *Record) []byte {
	if err := r.Validate(); err != nil {
		assert.Failf("wal: AppendFrame of an invalid record: %v", err)
	}
	start := len(dst)
	dst, body := frame.Append(dst, formatV1, r.FrameBytes()-frameHeaderBytes)
	binary.LittleEndian.PutUint64(body[0:], r.Seq)
	binary.LittleEndian.PutUint64(body[8:], uint64(r.TimestampMs))
	binary.LittleEndian.PutUint64(body[16:], r.Incarnation)
	binary.LittleEndian.PutUint32(body[24:], r.Partition)
	binary.LittleEndian.PutUint16(body[28:], uint16(len(r.Topic)))
	keyLen := uint32(noKey)
	if r.HasKey {
		keyLen = uint32(len(r.Key))
	}
	binary.LittleEndian.PutUint32(body[30:], keyLen)
	p := bodyFixedBytes
	p += copy(body[p:], r.Topic)
	if r.HasKey {
		p += copy(body[p:], r.Key)
	}
	copy(body[p:], r.Payload)
	frame.Seal(dst[start:], 0)
	return dst
}

// Frame decoding outcomes, with core/frame's ErrLength and ErrChecksum: the inputs of the
// recovery decision table (doc.go).
var (
	errShort  = frame.ErrShort // need more bytes, or a torn tail
	errZero   = frame.ErrZero  // unwritten space
	errFormat = errors.New("wal: unknown record format")
	errBody   = errors.New("wal: malformed record body")
)

// DecodeFrame decodes the frame at the start of b. It returns the record and the frame's
// size, or an error saying why b does not start with a valid frame. The record's slices
// alias b. It never panics, whatever b holds.
func DecodeFrame(b []byte) (Record, int, error) {
	h, body, err := frame.Read(b, frameBounds)
	if err != nil {
		return Record{}, 0, err
	}
	if h.Format != formatV1 {
		return Record{}, 0, errFormat
	}
	r, err := decodeBodyV1(body)
	return r, h.Size, err
}

func decodeBodyV1(body []byte) (Record, error) {
	r := Record{
		Seq:         binary.LittleEndian.Uint64(body[0:]),
		TimestampMs: int64(binary.LittleEndian.Uint64(body[8:])),
		Incarnation: binary.LittleEndian.Uint64(body[16:]),
		Partition:   binary.LittleEndian.Uint32(body[24:]),
	}
	topicLen := int(binary.LittleEndian.Uint16(body[28:]))
	keyLen := binary.LittleEndian.Uint32(body[30:])
	rest := body[bodyFixedBytes:]
	if topicLen == 0 || topicLen > TopicBytesMax || topicLen > len(rest) {
		return Record{}, errBody
	}
	r.Topic = string(rest[:topicLen])
	rest = rest[topicLen:]
	if keyLen != noKey {
		if keyLen > KeyBytesMax || int(keyLen) > len(rest) {
			return Record{}, errBody
		}
		r.HasKey = true
		r.Key = rest[:keyLen:keyLen]
		rest = rest[keyLen:]
	}
	if len(rest) == 0 || len(rest) > PayloadBytesMax {
		return Record{}, errBody
	}
	r.Payload = rest
	return r, nil
}
