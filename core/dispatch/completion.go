package dispatch

import (
	"errors"

	"github.com/narad/narad/core/wal"
)

// CommitDone feeds the answer to commit id. A nil err means every record of the commit
// is durable and verified on its partition. An answer for a commit that already timed out
// is ignored: its records were or will be sent again (a duplicate, never a loss).
func (d *Dispatcher) CommitDone(nowNs int64, id uint64, err error) {
	b, ok := d.inflight[id]
	if !ok {
		return
	}
	batch := d.batches[id]
	delete(d.inflight, id)
	delete(d.batches, id)
	b.inflight, b.inflightN = 0, 0
	if err == nil {
		d.stats.CommitsOK++
		for _, e := range batch {
			e.status = stDone
			d.stats.Committed++
		}
		d.skipDirty = true
		clear(b.ents[:len(batch)]) // the backing array outlives them: let them go
		b.ents = b.ents[len(batch):]
		b.failures, b.notBefore, b.failedAt = 0, 0, 0
		return
	}
	d.stats.CommitsFailed++
	if errors.Is(err, ErrPartitionFailed) {
		b.failedAt = max(nowNs, 1)
		b.failedOwner, _ = d.cat.Owner(b.key.Incarnation, b.key.Partition)
	}
	for _, e := range batch {
		e.status = stWaiting
	}
	d.reportFailed(b.key, batch)
	b.failures++
	b.notBefore = nowNs + d.cfg.FailureBackoffNs
	b.since = 0 // the records waited already: the backoff alone decides the retry
	if errors.Is(err, ErrIncarnation) {
		if mutDiscardWithoutConfirm { // the owner's word alone: its replica may lag
			d.discardBucket(b)
			return
		}
		b.discard = true
	}
}

// Tick expires commits past their timeout: they count as failed.
func (d *Dispatcher) Tick(nowNs int64) {
	for _, k := range d.keys {
		b := d.buckets[k]
		if b.inflight != 0 && nowNs >= b.deadline {
			d.CommitDone(nowNs, b.inflight, errTimeout)
		}
	}
}

var errTimeout = errors.New("dispatch: commit timed out")

// NextDeadline is the earliest commit timeout or backoff end, if any.
func (d *Dispatcher) NextDeadline() (int64, bool) {
	var at int64
	take := func(t int64) {
		if at == 0 || t < at {
			at = t
		}
	}
	for _, k := range d.keys {
		b := d.buckets[k]
		switch {
		case b.inflight != 0:
			take(b.deadline)
		case len(b.ents) > 0 && b.notBefore > d.pumpedNs:
			take(b.notBefore)
		case len(b.ents) > 0 && d.lingers(d.pumpedNs, b):
			// A linger that has ended wakes nothing: the bucket was eligible at the last
			// Pump, and what still holds it (fan-out, a barrier) has its own wake-up.
			take(b.since + d.cfg.LingerNs)
		}
	}
	if d.barrierToken == 0 && d.wantsBarrier() && d.barrierNotBefore > 0 {
		take(d.barrierNotBefore)
	}
	return at, at != 0
}

func (d *Dispatcher) wantsBarrier() bool {
	for _, k := range d.keys {
		if d.buckets[k].discard {
			return true
		}
	}
	return false
}

// requestBarrier asks for one leader confirmation when some bucket looks discardable.
func (d *Dispatcher) requestBarrier(nowNs int64) {
	if d.barrierToken != 0 || nowNs < d.barrierNotBefore || !d.wantsBarrier() {
		return
	}
	d.nextID++
	d.barrierToken = d.nextID
	d.out.Barriers = append(d.out.Barriers, d.barrierToken)
}

// BarrierDone feeds the leader's confirmation (ReadIndex applied locally) or its
// failure. Only now, re-reading the caught-up replica, is a record discarded: its topic
// incarnation must still be gone. Anything less keeps the record for the next pass.
func (d *Dispatcher) BarrierDone(nowNs int64, token uint64, err error) {
	if token != d.barrierToken {
		return
	}
	d.barrierToken = 0
	if err != nil || !d.cat.CaughtUp() {
		d.barrierNotBefore = nowNs + d.cfg.FailureBackoffNs
		return
	}
	for _, k := range d.keys {
		b := d.buckets[k]
		if !b.discard || b.inflight != 0 {
			continue
		}
		b.discard = false
		id, parts, ok := d.cat.Topic(k.Topic)
		if mutNoIncarnation {
			id = k.Incarnation
		}
		if ok && id == k.Incarnation && k.Partition < parts {
			continue // the topic is there after all: commit as usual
		}
		if mutDiscardWithoutConfirm {
			continue // (the mutation discards earlier, in Pump)
		}
		d.discardBucket(b)
	}
	d.Pump(nowNs)
}

func (d *Dispatcher) discardBucket(b *bucket) {
	for _, e := range b.ents {
		e.status = stDone
		d.stats.Discarded++
	}
	d.skipDirty = true
	b.ents = nil
}

// advanceCheckpoint moves the checkpoint over every leading record that is done and
// forgets them. The checkpoint never passes a record that is waiting or in flight.
func (d *Dispatcher) advanceCheckpoint() {
	n := 0
	for n < d.admitted && d.held[n].status == stDone {
		d.bytes -= len(d.held[n].rec.Payload)
		n++
	}
	clear(d.held[:n])
	d.held = d.held[n:]
	d.admitted -= n
	next := d.nextSeq
	if len(d.held) > 0 {
		next = d.held[0].rec.Seq
		if mutCheckpointPastSkipped {
			next = d.pastLastDone(next)
		}
		if mutCheckpointBeforeAck {
			next = d.pastLeadingInflight()
		}
	}
	if next > d.checkpoint {
		d.checkpoint = next
		d.out.Checkpoint = next
	}
}

// pastLastDone serves only the mutation build: one past the highest done seq.
func (d *Dispatcher) pastLastDone(next uint64) uint64 {
	for i := d.admitted - 1; i >= 0; i-- {
		if d.held[i].status == stDone {
			return max(next, d.held[i].rec.Seq+1)
		}
	}
	return next
}

// pastLeadingInflight serves only the mutation build: the first waiting seq, counting
// records whose commit is in flight as done.
func (d *Dispatcher) pastLeadingInflight() uint64 {
	for i := 0; i < d.admitted; i++ {
		if d.held[i].status == stWaiting {
			return d.held[i].rec.Seq
		}
	}
	if d.admitted < len(d.held) {
		return d.held[d.admitted].rec.Seq
	}
	return d.nextSeq
}

// Checkpoint is the first seq not yet dispatched.
func (d *Dispatcher) Checkpoint() uint64 { return d.checkpoint }

// reportFailed tells Config.OnCommitFailed of a failed commit's records.
func (d *Dispatcher) reportFailed(k Key, batch []*entry) {
	if d.cfg.OnCommitFailed == nil {
		return
	}
	recs := make([]wal.Record, len(batch))
	for i, e := range batch {
		recs[i] = e.rec
	}
	d.cfg.OnCommitFailed(k, recs)
}
