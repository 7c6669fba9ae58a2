package sched

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
)

// Trace folds every processed event into one hash: the same seed gives the same hash in
// any process (narad-sim prints it; CI compares two processes).
type Trace struct{ h hash.Hash64 }

// NewTrace returns an empty trace.
func NewTrace() *Trace { return &Trace{h: fnv.New64a()} }

// Record folds one event: its kind, the time and its values.
func (t *Trace) Record(nowNs int64, kind byte, vals ...uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(nowNs))
	t.h.Write([]byte{kind})
	t.h.Write(b[:])
	for _, v := range vals {
		binary.LittleEndian.PutUint64(b[:], v)
		t.h.Write(b[:])
	}
}

// Sum is the hash so far, as 16 hex digits.
func (t *Trace) Sum() string { return fmt.Sprintf("%016x", t.h.Sum64()) }

// Between draws uniformly in [lo, hi].
func Between(r *rng.Rand, lo, hi int64) int64 { return lo + int64(r.Intn(int(hi-lo)+1)) }

// Latency draws the time op takes: syncs from syncNs, every other op from opNs.
func Latency(r *rng.Rand, op disk.Op, opNs, syncNs [2]int64) int64 {
	if op.Kind == disk.KindSync || op.Kind == disk.KindSyncDir {
		return Between(r, syncNs[0], syncNs[1])
	}
	return Between(r, opNs[0], opNs[1])
}
