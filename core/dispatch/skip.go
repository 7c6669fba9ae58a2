package dispatch

import (
	"cmp"
	"slices"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/wal"
)

// The skip-set made durable (a documented extension of the seed's memory-only
// committedAhead set; see doc.go). Records at or above the checkpoint that are done are
// described to the WAL as a wal.Skip after every pass that changed them, and the WAL writes
// the newest description with the checkpoint, at most CheckpointSyncIntervalNs later. A
// restart restores it, so records done before the last checkpoint write are not committed
// again.

// RedispatchInFlightMarginNs is the margin the redispatch bound allows, on top of the
// WAL's checkpoint flush interval, for commits in flight at a crash (the owner committed,
// its answer had not reached the dispatcher) and for the checkpoint's own write and
// fdatasync. It is a stated bound, not a timer: the simulators check duplicates against it.
const RedispatchInFlightMarginNs int64 = 250_000_000 // 250 ms

// RedispatchWindowNs is how long before a crash a record's first commit may have happened
// for the restart to commit it a second time, with the default checkpoint flush interval:
// its answer came within the last flush interval (so the skip-set on disk did not name it
// yet) or was still in flight.
const RedispatchWindowNs int64 = wal.DefaultCheckpointSyncIntervalNs + RedispatchInFlightMarginNs

// RedispatchBoundNs is RedispatchWindowNs for a WAL whose CheckpointSyncIntervalNs is
// checkpointSyncIntervalNs (0: the default), where a commit's answer may take up to
// commitAnswerMaxNs. A commit is in flight until its answer or its timeout: where answers
// can be lost (a remote owner behind a cut network), pass the dispatcher's
// CommitTimeoutNs, since the owner may have committed that long before the crash; where
// they cannot (local commits), pass 0 and RedispatchInFlightMarginNs covers them.
func RedispatchBoundNs(checkpointSyncIntervalNs, commitAnswerMaxNs int64) int64 {
	if checkpointSyncIntervalNs <= 0 {
		checkpointSyncIntervalNs = wal.DefaultCheckpointSyncIntervalNs
	}
	return checkpointSyncIntervalNs + max(RedispatchInFlightMarginNs, commitAnswerMaxNs)
}

// home names the partition a record was accepted for (its WAL copy's), whatever partition
// it was rerouted to since: a restart replays it there.
type home struct {
	incarnation uint64
	partition   uint32
}

// pendQueue holds one home partition's records that were not done when last looked at, in
// seq order. Records done since are dropped from its front lazily.
type pendQueue struct{ ents []*entry }

// Restore takes the skip-set recovered with the checkpoint: the records it calls done are
// not committed again. It must be called before the first Add.
func (d *Dispatcher) Restore(s wal.Skip) {
	assert.That(len(d.held) == 0 && d.nextSeq == d.checkpoint, "dispatch: Restore after Add")
	if mutRedispatchAll {
		return // the bug: everything above the checkpoint is committed again
	}
	d.restored = s
}

// track files a new record under its home partition, or marks it done when the restored
// skip-set says it was done before the restart.
func (d *Dispatcher) track(e *entry) {
	d.skipDirty = true
	if d.restored.Done(&e.rec) {
		e.status = stDone
		d.stats.Restored++
		return
	}
	h := home{e.rec.Incarnation, e.rec.Partition}
	q := d.pend[h]
	if q == nil {
		q = &pendQueue{}
		d.pend[h] = q
	}
	q.ents = append(q.ents, e)
}

// emitSkip puts the current skip-set in Ready when it changed since the last one.
func (d *Dispatcher) emitSkip() {
	if !d.skipDirty {
		return
	}
	d.skipDirty = false
	s := d.skip()
	if s.Equal(d.lastSkip) {
		return
	}
	d.lastSkip = s
	d.out.Skip = &s
}

// skip describes the done records at or above the checkpoint. Each home partition with
// work not done contributes its first seq not done (from); the CheckpointPendingMax
// lowest are listed and Below is the next one's from (or one past the last record added),
// so every record below Below of an unlisted partition is done. A record counts as done
// only once its commit was answered durable or it was discarded: a commit in flight or
// failed is work, and the skip-set never names it (invariant 5).
func (d *Dispatcher) skip() wal.Skip {
	type cand struct {
		from uint64
		h    home
	}
	cands := make([]cand, 0, len(d.pend))
	for h, q := range d.pend { //narad:sorted (cands are sorted below)
		n := 0
		for n < len(q.ents) && q.ents[n].status == stDone {
			n++
		}
		clear(q.ents[:n])
		q.ents = q.ents[n:]
		if len(q.ents) == 0 {
			delete(d.pend, h)
			continue
		}
		cands = append(cands, cand{q.ents[0].rec.Seq, h})
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.from, b.from) })
	s := wal.Skip{Below: d.nextSeq}
	if len(cands) > wal.CheckpointPendingMax {
		s.Below = cands[wal.CheckpointPendingMax].from
		cands = cands[:wal.CheckpointPendingMax]
	}
	if s.Below <= d.checkpoint {
		return wal.Skip{} // nothing done above the checkpoint: the checkpoint says it all
	}
	for _, c := range cands {
		if c.from < s.Below {
			s.Pending = append(
				s.Pending,
				wal.SkipPending{Incarnation: c.h.incarnation, Partition: c.h.partition, From: c.from},
			)
		}
	}
	slices.SortFunc(s.Pending, func(a, b wal.SkipPending) int {
		if c := cmp.Compare(a.Incarnation, b.Incarnation); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return s
}
