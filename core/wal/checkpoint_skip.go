package wal

import (
	"cmp"
	"slices"

	"github.com/narad/narad/core/assert"
)

// CheckpointPendingMax bounds the partitions a checkpoint slot names as still pending
// (format 2, checkpoint.go): 34 header bytes plus 20 bytes each must fit a 512-byte slot.
const CheckpointPendingMax = 23

// Skip says which records at or above the checkpoint are done already (committed to their
// partition, or discarded), so that a restart does not commit them a second time. It is
// the durable form of the dispatcher's skip-set (seed: committedAhead), written with the
// checkpoint in the same slot.
//
// A record (incarnation, partition, seq) with checkpoint <= seq < Below is done, unless
// its partition is listed in Pending with From <= seq. Records at or above Below are not
// known to be done. The zero Skip claims nothing. Partition is the one the record was
// accepted for (its WAL copy's), not a partition it may have been rerouted to.
type Skip struct {
	Below   uint64
	Pending []SkipPending // sorted by (Incarnation, Partition), at most CheckpointPendingMax
}

// SkipPending names a partition that still had work below Below: its records from From on
// are not known to be done.
type SkipPending struct {
	Incarnation uint64
	Partition   uint32
	From        uint64 // first seq of the partition not done (From < Below)
}

// Done reports whether the Skip says r is done. Only records at or above the checkpoint
// the Skip was recovered with may be asked about.
func (s Skip) Done(r *Record) bool {
	if r.Seq >= s.Below {
		return false
	}
	i, ok := slices.BinarySearchFunc(s.Pending, r, func(p SkipPending, r *Record) int {
		if c := cmp.Compare(p.Incarnation, r.Incarnation); c != 0 {
			return c
		}
		return cmp.Compare(p.Partition, r.Partition)
	})
	return !ok || r.Seq < s.Pending[i].From
}

// Valid reports whether s can be written: at most CheckpointPendingMax partitions, sorted
// and distinct, each with From < Below.
func (s Skip) Valid() bool {
	if len(s.Pending) > CheckpointPendingMax {
		return false
	}
	for i, p := range s.Pending {
		if p.From >= s.Below {
			return false
		}
		if i > 0 && comparePending(s.Pending[i-1], p) >= 0 {
			return false
		}
	}
	return true
}

// Equal reports whether two Skips say the same.
func (s Skip) Equal(o Skip) bool {
	return s.Below == o.Below && slices.Equal(s.Pending, o.Pending)
}

func comparePending(a, b SkipPending) int {
	if c := cmp.Compare(a.Incarnation, b.Incarnation); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// SetSkip records which records at or above the checkpoint are done (see Skip). Like a
// checkpoint move it is made durable within CheckpointSyncIntervalNs, in the same slot
// write. The caller must only name records whose commit was answered durable (or that were
// discarded): the Skip is trusted after a crash. An invalid Skip is a programmer error.
func (l *Log) SetSkip(nowNs int64, s Skip) {
	if l.state != stateReady {
		return
	}
	assert.That(s.Valid(), "wal: invalid skip")
	assert.That(s.Below <= l.durableNext, "wal: skip passes a record that is not durable")
	if s.Equal(l.skipWanted) {
		return
	}
	l.skipWanted = Skip{Below: s.Below, Pending: slices.Clone(s.Pending)}
	if l.ckptFlushAt == 0 {
		l.ckptFlushAt = nowNs + l.cfg.CheckpointSyncIntervalNs
	}
}
