package plog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/frame"
)

// Batch frame constants. They are on disk: do not change them; add a format byte instead.
// The layout is drawn in doc.go.
const (
	formatV1         = 1                 // a batch (written before tags; still read)
	formatTagged     = 2                 // formatV1 whose CRC starts from the partition's tag
	frameHeaderBytes = frame.HeaderBytes // crc u32 | length u32 | format u8 (core/frame)
	batchFixedBytes  = 20                // base offset u64 | count u32 | commit time ms i64
	entryFixedBytes  = 8                 // key length u32 | payload length u32
	noKey            = 0xFFFFFFFF
)

// Limits of one commit, enforced by Commit (an over-limit commit is answered and changes
// nothing) and by the decoder (a frame beyond them is damage, never a batch).
const (
	EntriesMax      = 65_536   // entries in one commit
	BatchBytesMax   = 16 << 20 // encoded frame bytes of one commit
	KeyBytesMax     = 4096     // bytes of one key
	PayloadBytesMax = 1 << 20  // bytes of one payload
)

// frameBounds are the body lengths a batch frame may have: one entry at least.
var frameBounds = frame.Bounds{
	Min: batchFixedBytes + entryFixedBytes,
	Max: BatchBytesMax - frameHeaderBytes,
}

// Entry is one record of a commit: the keyed envelope minus the commit time, which the
// log stamps once for the whole batch.
type Entry struct {
	Key     []byte // ignored unless HasKey
	HasKey  bool   // a present empty key differs from no key
	Payload []byte
}

// Batch is one decoded frame: the entries of one commit and where they sit in the log.
type Batch struct {
	BaseOffset   uint64 // offset of Entries[0]
	CommitTimeMs int64  // Unix milliseconds of the commit
	Entries      []Entry
}

// Limit errors: a commit answered with one of them changed nothing.
var (
	ErrEmpty    = errors.New("plog: commit holds no entries")
	ErrTooLarge = errors.New("plog: commit over a limit")
)

// BatchBytes returns the encoded frame size of entries, or an error naming the first
// limit they break. A nil error means AppendBatch accepts them.
func BatchBytes(entries []Entry) (int, error) {
	if len(entries) == 0 {
		return 0, ErrEmpty
	}
	if len(entries) > EntriesMax {
		return 0, fmt.Errorf("%w: %d entries, at most %d", ErrTooLarge, len(entries), EntriesMax)
	}
	n := frameHeaderBytes + batchFixedBytes
	for i := range entries {
		e := &entries[i]
		if e.HasKey && len(e.Key) > KeyBytesMax {
			return 0, fmt.Errorf(
				"%w: entry %d key of %d bytes, at most %d",
				ErrTooLarge,
				i,
				len(e.Key),
				KeyBytesMax,
			)
		}
		if len(e.Payload) > PayloadBytesMax {
			return 0, fmt.Errorf(
				"%w: entry %d payload of %d bytes, at most %d",
				ErrTooLarge,
				i,
				len(e.Payload),
				PayloadBytesMax,
			)
		}
		n += entryFixedBytes + len(e.Payload)
		if e.HasKey {
			n += len(e.Key)
		}
		if n > BatchBytesMax {
			return 0, fmt.Errorf("%w: batch past %d bytes", ErrTooLarge, BatchBytesMax)
		}
	}
	return n, nil
}

// AppendBatch appends the frame of one batch to dst and returns the extended slice. The
// entries must be within the limits (see BatchBytes); anything else is a programmer error.
func AppendBatch(dst []byte, base uint64, commitMs int64, entries []Entry) []byte {
	return AppendBatchFor(dst, "", base, commitMs, entries)
}

// AppendBatchFor is AppendBatch for the partition whose log directory is dir: the
// frame's CRC starts from the directory's tag (format 2), so that a frame of another
// partition, which a misdirected write can land in this partition's segment whole and
// valid, fails its check here (doc.go, fmt 2; cluster seed 8865). dir "" writes format 1.
func AppendBatchFor(dst []byte, dir string, base uint64, commitMs int64, entries []Entry) []byte {
	n, err := BatchBytes(entries)
	if err != nil {
		assert.Failf("plog: AppendBatch beyond the limits: %v", err)
	}
	format := byte(formatV1)
	if dir != "" {
		format = formatTagged
	}
	start := len(dst)
	dst, body := frame.Append(dst, format, n-frameHeaderBytes) // every body byte is written below
	binary.LittleEndian.PutUint64(body[0:], base)
	binary.LittleEndian.PutUint32(body[8:], uint32(len(entries)))
	binary.LittleEndian.PutUint64(body[12:], uint64(commitMs))
	p := batchFixedBytes
	for i := range entries {
		e := &entries[i]
		keyLen := uint32(noKey)
		if e.HasKey {
			keyLen = uint32(len(e.Key))
		}
		binary.LittleEndian.PutUint32(body[p:], keyLen)
		binary.LittleEndian.PutUint32(body[p+4:], uint32(len(e.Payload)))
		p += entryFixedBytes
		if e.HasKey {
			p += copy(body[p:], e.Key)
		}
		p += copy(body[p:], e.Payload)
	}
	assert.That(p == len(body), "plog: batch body size differs from BatchBytes")
	frame.Seal(dst[start:], tagSeed(dir))
	return dst
}

// tagSeed is the CRC a tagged frame's checksum starts from: that of its partition's tag,
// the last element of its log directory (topic id and partition index, unique on a
// disk; core/lease tags its ack frames alike, under other format bytes). An untagged
// frame starts from 0, a plain CRC.
func tagSeed(dir string) uint32 {
	if dir == "" {
		return 0
	}
	return frame.Checksum(0, []byte(path.Base(dir)))
}

// Frame decoding outcomes, with core/frame's ErrZero, ErrLength and ErrChecksum: the
// inputs of the recovery decision table (doc.go).
var (
	errShort  = frame.ErrShort // read on, or a torn tail
	errFormat = errors.New("plog: unknown batch format")
	errBody   = errors.New("plog: malformed batch body")
)

// frameLen reads the total size a frame at the start of b claims, if its length field is
// in range. Recovery uses it to size the read of a frame larger than its read chunk.
func frameLen(b []byte) (int, bool) {
	h, err := frame.Peek(b, frameBounds)
	return h.Size, err == nil
}

// DecodeBatch decodes the frame at the start of b. It returns the batch and the frame's
// size, or an error saying why b does not start with a valid frame. The entries alias b.
// It never panics, whatever b holds, and a batch it accepts re-encodes to the same bytes.
func DecodeBatch(b []byte) (Batch, int, error) {
	return DecodeBatchFor(b, "")
}

// DecodeBatchFor is DecodeBatch in the partition whose log directory is dir: it accepts
// format 1 frames and the format 2 frames of that partition ("": format 1 only). A batch
// it accepts re-encodes to the same bytes with AppendBatchFor, in dir for format 2.
func DecodeBatchFor(b []byte, dir string) (Batch, int, error) {
	h, err := frame.Peek(b, frameBounds)
	if err != nil {
		return Batch{}, 0, err
	}
	seed := uint32(0)
	if h.Format == formatTagged && dir != "" {
		seed = tagSeed(dir)
	}
	body, err := h.Body(b, seed)
	if err != nil {
		return Batch{}, 0, err
	}
	if h.Format != formatV1 && (h.Format != formatTagged || dir == "") {
		return Batch{}, 0, errFormat
	}
	bt, err := decodeBodyV1(body)
	return bt, h.Size, err
}

func decodeBodyV1(body []byte) (Batch, error) {
	bt := Batch{
		BaseOffset:   binary.LittleEndian.Uint64(body[0:]),
		CommitTimeMs: int64(binary.LittleEndian.Uint64(body[12:])),
	}
	count := binary.LittleEndian.Uint32(body[8:])
	if count == 0 || count > EntriesMax || bt.BaseOffset+uint64(count) < bt.BaseOffset {
		return Batch{}, errBody
	}
	if int(count) > (len(body)-batchFixedBytes)/entryFixedBytes {
		return Batch{}, errBody // cannot hold that many entries: refuse before allocating
	}
	bt.Entries = make([]Entry, count)
	rest := body[batchFixedBytes:]
	for i := range bt.Entries {
		if len(rest) < entryFixedBytes {
			return Batch{}, errBody
		}
		keyLen := binary.LittleEndian.Uint32(rest[0:])
		payLen := binary.LittleEndian.Uint32(rest[4:])
		rest = rest[entryFixedBytes:]
		e := &bt.Entries[i]
		if keyLen != noKey {
			if keyLen > KeyBytesMax || int(keyLen) > len(rest) {
				return Batch{}, errBody
			}
			e.HasKey, e.Key, rest = true, rest[:keyLen:keyLen], rest[keyLen:]
		}
		if payLen > PayloadBytesMax || int(payLen) > len(rest) {
			return Batch{}, errBody
		}
		e.Payload, rest = rest[:payLen:payLen], rest[payLen:]
	}
	if len(rest) != 0 {
		return Batch{}, errBody // trailing bytes: the frame is not what the encoder wrote
	}
	return bt, nil
}
