package wal

import (
	"encoding/binary"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/frame"
)

// Checkpoint file format (on disk: do not change). Two slots, written alternately, so a
// write torn by a crash destroys at most the slot being written and the other one still
// holds the previous checkpoint:
//
//	offset 0:   slot 0
//	offset 512: slot 1   (same layout)
//
//	format 1 (magic "NCKP", written before the skip-set was made durable; still read):
//	crc32c u32 | magic u32 | generation u64 | seq u64
//
//	format 2 (magic "NCK2", written now):
//	crc32c u32 | magic u32 | generation u64 | seq u64 | below u64 | n u16 |
//	n × (incarnation u64 | partition u32 | from u64)          n <= CheckpointPendingMax
//
// The crc covers everything after it up to the end of the slot's used bytes (24, or 34 +
// 20n); the bytes after that are not read. seq is the checkpoint: the first seq not yet
// dispatched. Format 2 adds the skip-set above it (Skip, checkpoint_skip.go): below and the
// n pending partitions, sorted by (incarnation, partition), each with from < below. A
// format 1 slot decodes with the zero Skip: everything above its checkpoint is dispatched
// again, as before. Recovery takes the valid slot with the highest generation; with no
// valid slot it falls back to the oldest record on disk (replaying more than needed is a
// duplicate, never a loss).
const (
	checkpointMagic      = 0x504b434e // "NCKP", format 1
	checkpointMagicV2    = 0x324b434e // "NCK2", format 2
	checkpointSlotBytes  = 512
	checkpointSlotUsed   = 24 // format 1, and the header every format starts with
	checkpointV2Fixed    = 34 // format 2 without its pending partitions
	checkpointV2Pending  = 20 // bytes per pending partition
	checkpointFileBytes  = 2 * checkpointSlotBytes
	checkpointGenInitial = 0
)

type checkpointSlot struct {
	gen  uint64
	seq  uint64
	skip Skip // always zero in format 1
	v1   bool // format 1 (decoded from an old file; the WAL writes format 2)
}

func encodeCheckpointSlot(s checkpointSlot) []byte {
	if s.v1 {
		b := make([]byte, checkpointSlotUsed)
		binary.LittleEndian.PutUint32(b[4:], checkpointMagic)
		binary.LittleEndian.PutUint64(b[8:], s.gen)
		binary.LittleEndian.PutUint64(b[16:], s.seq)
		binary.LittleEndian.PutUint32(b[0:], frame.Checksum(0, b[4:]))
		return b
	}
	assert.That(s.skip.Valid(), "wal: encoding an invalid skip")
	b := make([]byte, checkpointV2Fixed+checkpointV2Pending*len(s.skip.Pending))
	binary.LittleEndian.PutUint32(b[4:], checkpointMagicV2)
	binary.LittleEndian.PutUint64(b[8:], s.gen)
	binary.LittleEndian.PutUint64(b[16:], s.seq)
	binary.LittleEndian.PutUint64(b[24:], s.skip.Below)
	binary.LittleEndian.PutUint16(b[32:], uint16(len(s.skip.Pending)))
	for i, p := range s.skip.Pending {
		e := b[checkpointV2Fixed+i*checkpointV2Pending:]
		binary.LittleEndian.PutUint64(e[0:], p.Incarnation)
		binary.LittleEndian.PutUint32(e[8:], p.Partition)
		binary.LittleEndian.PutUint64(e[12:], p.From)
	}
	binary.LittleEndian.PutUint32(b[0:], frame.Checksum(0, b[4:]))
	return b
}

// decodeCheckpointSlot decodes the slot starting at b[0] (b may run past the slot: only
// its first checkpointSlotBytes are read).
func decodeCheckpointSlot(b []byte) (checkpointSlot, bool) {
	b = b[:min(len(b), checkpointSlotBytes)]
	if len(b) < checkpointSlotUsed {
		return checkpointSlot{}, false
	}
	used, magic := checkpointSlotUsed, binary.LittleEndian.Uint32(b[4:])
	switch magic {
	case checkpointMagic:
	case checkpointMagicV2:
		if len(b) < checkpointV2Fixed {
			return checkpointSlot{}, false
		}
		n := int(binary.LittleEndian.Uint16(b[32:]))
		if n > CheckpointPendingMax {
			return checkpointSlot{}, false
		}
		used = checkpointV2Fixed + n*checkpointV2Pending
		if len(b) < used {
			return checkpointSlot{}, false
		}
	default:
		return checkpointSlot{}, false
	}
	if frame.Checksum(0, b[4:used]) != binary.LittleEndian.Uint32(b[0:]) {
		return checkpointSlot{}, false
	}
	s := checkpointSlot{
		gen: binary.LittleEndian.Uint64(b[8:]),
		seq: binary.LittleEndian.Uint64(b[16:]),
		v1:  magic == checkpointMagic,
	}
	if s.v1 {
		return s, true
	}
	s.skip = decodeSkip(b[checkpointV2Fixed-10 : used])
	return s, s.skip.Valid()
}

// decodeSkip reads below, n and the n pending partitions of a format 2 slot whose crc
// has been checked.
func decodeSkip(b []byte) Skip {
	s := Skip{Below: binary.LittleEndian.Uint64(b[0:])}
	n := int(binary.LittleEndian.Uint16(b[8:]))
	if n > 0 {
		s.Pending = make([]SkipPending, n)
	}
	for i := range s.Pending {
		e := b[10+i*checkpointV2Pending:]
		s.Pending[i] = SkipPending{
			Incarnation: binary.LittleEndian.Uint64(e[0:]),
			Partition:   binary.LittleEndian.Uint32(e[8:]),
			From:        binary.LittleEndian.Uint64(e[12:]),
		}
	}
	return s
}

// decodeCheckpointFile returns the newest valid slot of a checkpoint file's bytes.
func decodeCheckpointFile(b []byte) (checkpointSlot, bool) {
	var best checkpointSlot
	found := false
	for off := 0; off < checkpointFileBytes; off += checkpointSlotBytes {
		if off+checkpointSlotUsed > len(b) {
			break
		}
		s, ok := decodeCheckpointSlot(b[off:])
		if ok && (!found || s.gen > best.gen) {
			best, found = s, true
		}
	}
	return best, found
}

// checkpointFileSuspect reports whether a slot holds bytes but fails its check: a torn
// write, or a read corrupted in passing. Recovery re-reads such a file before trusting an
// older slot, so that a bit flip on the way in cannot move the checkpoint backwards.
func checkpointFileSuspect(b []byte) bool {
	for off := 0; off < checkpointFileBytes; off += checkpointSlotBytes {
		if off >= len(b) {
			break
		}
		head := b[off:min(len(b), off+checkpointSlotUsed)]
		if _, ok := decodeCheckpointSlot(b[off:]); !ok && !frame.IsZero(head) {
			return true
		}
	}
	return false
}

// checkpointSlotOffset is where generation gen is written.
func checkpointSlotOffset(gen uint64) int64 {
	return int64(gen%2) * checkpointSlotBytes
}

// DecodeCheckpoint returns the checkpoint held by a checkpoint file's bytes: the seq of
// its newest valid slot. ok is false when no slot is valid. It never panics.
func DecodeCheckpoint(b []byte) (seq uint64, ok bool) {
	s, ok := decodeCheckpointFile(b)
	return s.seq, ok
}

// DecodeCheckpointSkip is DecodeCheckpoint with the skip-set of the slot (the zero Skip
// for a format 1 slot). It never panics.
func DecodeCheckpointSkip(b []byte) (seq uint64, skip Skip, ok bool) {
	s, ok := decodeCheckpointFile(b)
	return s.seq, s.skip, ok
}

// CheckpointFile is the checkpoint's file name within the WAL directory.
const CheckpointFile = "checkpoint"

// EncodeCheckpointFile returns a whole checkpoint file holding seq in one format 1 slot
// (generation 1), as a WAL written before format 2 left it. Tools and tests use it; the
// WAL itself writes one slot at a time.
func EncodeCheckpointFile(seq uint64) []byte {
	b := make([]byte, checkpointFileBytes)
	copy(b[checkpointSlotOffset(1):], encodeCheckpointSlot(checkpointSlot{gen: 1, seq: seq, v1: true}))
	return b
}

// EncodeCheckpointFileSkip returns a whole checkpoint file holding seq and skip in one
// format 2 slot (generation 1). skip must be Valid.
func EncodeCheckpointFileSkip(seq uint64, skip Skip) []byte {
	b := make([]byte, checkpointFileBytes)
	copy(
		b[checkpointSlotOffset(1):],
		encodeCheckpointSlot(checkpointSlot{gen: 1, seq: seq, skip: skip}),
	)
	return b
}
