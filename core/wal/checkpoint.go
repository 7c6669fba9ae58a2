package wal

import (
	"encoding/binary"
	"hash/crc32"
)

// Checkpoint file format (on disk: do not change). Two slots, written alternately, so a
// write torn by a crash destroys at most the slot being written and the other one still
// holds the previous checkpoint:
//
//	offset 0:   slot 0   crc32c u32 | magic u32 | generation u64 | seq u64
//	offset 512: slot 1   (same layout)
//
// The crc covers magic, generation and seq. Recovery takes the valid slot with the
// highest generation; with no valid slot it falls back to the oldest record on disk
// (replaying more than needed is a duplicate, never a loss).
const (
	checkpointMagic      = 0x504b434e // "NCKP"
	checkpointSlotBytes  = 512
	checkpointSlotUsed   = 24
	checkpointFileBytes  = 2 * checkpointSlotBytes
	checkpointGenInitial = 0
)

type checkpointSlot struct {
	gen uint64
	seq uint64
}

func encodeCheckpointSlot(s checkpointSlot) []byte {
	b := make([]byte, checkpointSlotUsed)
	binary.LittleEndian.PutUint32(b[4:], checkpointMagic)
	binary.LittleEndian.PutUint64(b[8:], s.gen)
	binary.LittleEndian.PutUint64(b[16:], s.seq)
	binary.LittleEndian.PutUint32(b[0:], crc32.Checksum(b[4:], castagnoli))
	return b
}

func decodeCheckpointSlot(b []byte) (checkpointSlot, bool) {
	if len(b) < checkpointSlotUsed {
		return checkpointSlot{}, false
	}
	if binary.LittleEndian.Uint32(b[4:]) != checkpointMagic {
		return checkpointSlot{}, false
	}
	if crc32.Checksum(b[4:checkpointSlotUsed], castagnoli) != binary.LittleEndian.Uint32(b[0:]) {
		return checkpointSlot{}, false
	}
	return checkpointSlot{
		gen: binary.LittleEndian.Uint64(b[8:]),
		seq: binary.LittleEndian.Uint64(b[16:]),
	}, true
}

// decodeCheckpointFile returns the newest valid slot of a checkpoint file's bytes.
func decodeCheckpointFile(b []byte) (checkpointSlot, bool) {
	var best checkpointSlot
	found := false
	for off := 0; off+checkpointSlotUsed <= len(b) && off < checkpointFileBytes; off += checkpointSlotBytes {
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
		slot := b[off:min(len(b), off+checkpointSlotUsed)]
		if _, ok := decodeCheckpointSlot(slot); !ok && !allZero(slot) {
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

// CheckpointFile is the checkpoint's file name within the WAL directory.
const CheckpointFile = "checkpoint"

// EncodeCheckpointFile returns a whole checkpoint file holding seq in one slot
// (generation 1). Tools and tests use it; the WAL itself writes one slot at a time.
func EncodeCheckpointFile(seq uint64) []byte {
	b := make([]byte, checkpointFileBytes)
	copy(b[checkpointSlotOffset(1):], encodeCheckpointSlot(checkpointSlot{gen: 1, seq: seq}))
	return b
}
