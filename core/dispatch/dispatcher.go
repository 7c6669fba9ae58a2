package dispatch

import (
	"errors"
	"slices"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/wal"
)

// ErrIncarnation is what an owner answers when a record's topic incarnation is not the
// topic's current one: the record may belong to a deleted topic, so the dispatcher checks
// for a discard instead of retrying blindly.
var ErrIncarnation = errors.New("dispatch: topic incarnation mismatch")

// ErrPartitionFailed is a commit answer: the partition's owner reports the partition
// failed (poisoned by a failed fdatasync or read-back, until it reopens). Its waiting
// records go to a healthy sibling at once, for PartitionFailedHoldNs; then a commit
// tries it again.
var ErrPartitionFailed = errors.New("dispatch: the partition failed at its owner")

// PartitionFailedHoldNs is how long an answer ErrPartitionFailed keeps a partition's
// records going to its siblings.
const PartitionFailedHoldNs = 2_000_000_000

// Dispatcher moves durable WAL records to their partitions. See doc.go.
type Dispatcher struct {
	cfg Config
	cat Catalog
	out Ready

	held       []*entry // every record at or above the checkpoint, in seq order
	admitted   int      // held[:admitted] are in buckets (or done)
	checkpoint uint64   // first seq not yet dispatched, as last reported
	nextSeq    uint64   // one past the highest seq added
	bytes      int      // payload bytes of the records held

	buckets  map[Key]*bucket
	keys     []Key              // bucket keys, sorted: the order of every pass
	inflight map[uint64]*bucket // commit id -> bucket
	batches  map[uint64][]*entry
	nextID   uint64
	window   int

	barrierToken     uint64 // the barrier in flight, 0 when none
	barrierNotBefore int64

	pumpedNs int64 // the time of the last Pump: lingers that ended by then need no timer

	// The skip-set's durable form (skip.go).
	restored  wal.Skip            // what the restart recovered: those records are done
	pend      map[home]*pendQueue // records not done, by home partition
	skipDirty bool                // something was added or done since the last skip
	lastSkip  wal.Skip            // the skip last put in Ready

	stats Stats
}

// Stats counts what the dispatcher did.
type Stats struct {
	Committed, Discarded, Rerouted, CommitsOK, CommitsFailed uint64
	Restored                                                 uint64 // done by the recovered skip-set
	Window                                                   int
}

// New returns a dispatcher that starts at checkpoint (the WAL's recovered checkpoint).
func New(cfg Config, cat Catalog, checkpoint uint64) *Dispatcher {
	cfg = cfg.withDefaults()
	return &Dispatcher{
		cfg: cfg, cat: cat, checkpoint: checkpoint, nextSeq: checkpoint,
		buckets: map[Key]*bucket{}, inflight: map[uint64]*bucket{}, pend: map[home]*pendQueue{},
		batches: map[uint64][]*entry{}, window: cfg.BaseWindow,
	}
}

// Add hands over a record that is durable in the WAL. Records arrive in seq order.
func (d *Dispatcher) Add(nowNs int64, rec wal.Record) {
	assert.That(rec.Seq >= d.nextSeq, "dispatch: records added out of seq order")
	e := &entry{rec: rec, status: stParked}
	d.track(e)
	d.held = append(d.held, e)
	d.nextSeq = rec.Seq + 1
	d.bytes += len(rec.Payload)
}

// Full reports whether the backlog is at its bound: the node refuses new produces.
func (d *Dispatcher) Full() bool { return d.bytes >= d.cfg.BacklogBytesMax }

// Backlog is the number of records held at or above the checkpoint, and their payload
// bytes: a restart replays them, less those the durable skip-set names done.
func (d *Dispatcher) Backlog() (records int, bytes int) { return len(d.held), d.bytes }

// Stats returns the counters.
func (d *Dispatcher) Stats() Stats { s := d.stats; s.Window = d.window; return s }

// Ready returns the actions produced since the last call and clears them.
func (d *Dispatcher) Ready() Ready {
	r := d.out
	d.out = Ready{}
	return r
}

// Pump runs a pass: admit, commit, discard, move the checkpoint. The node calls it after
// every batch of inputs (it is cheap when there is nothing to do).
func (d *Dispatcher) Pump(nowNs int64) {
	d.pumpedNs = nowNs
	d.admit(nowNs)
	d.rerouteStuck(nowNs)
	formed, records := 0, 0
	for _, k := range d.keys {
		if len(d.inflight) >= d.cfg.FanoutMax {
			break
		}
		b := d.buckets[k]
		if b.inflight != 0 || len(b.ents) == 0 || nowNs < b.notBefore || b.discard ||
			d.lingers(nowNs, b) {
			continue
		}
		id, parts, ok := d.cat.Topic(k.Topic)
		if mutNoIncarnation {
			id = k.Incarnation
		}
		if !ok || id != k.Incarnation || k.Partition >= parts {
			if mutDiscardWithoutConfirm {
				d.discardBucket(b)
				continue
			}
			b.discard = true // confirm with the leader before destroying anything
			continue
		}
		records += d.startCommit(nowNs, b)
		formed++
	}
	d.adaptWindow(formed, records)
	d.requestBarrier(nowNs)
	d.advanceCheckpoint()
	d.emitSkip()
}

// admit moves parked records below the lookahead horizon into their buckets. The horizon
// bounds how far past a stuck record the dispatcher works (and so the skip-set's size).
func (d *Dispatcher) admit(nowNs int64) {
	horizon := d.checkpoint + uint64(d.window*d.cfg.LookaheadWindows)
	for d.admitted < len(d.held) && d.held[d.admitted].rec.Seq < horizon {
		e := d.held[d.admitted]
		if e.status == stDone { // done before a restart (the recovered skip-set)
			d.admitted++
			continue
		}
		e.status = stWaiting
		b := d.bucket(Key{Topic: e.rec.Topic, Incarnation: e.rec.Incarnation, Partition: e.rec.Partition})
		if len(b.ents) == b.inflightN {
			b.since = nowNs // the first record waiting
		}
		b.ents = append(b.ents, e)
		d.admitted++
	}
}

// bucket returns k's bucket, made on first use.
func (d *Dispatcher) bucket(k Key) *bucket {
	b := d.buckets[k]
	if b == nil {
		b = &bucket{key: k}
		d.buckets[k] = b
		i, _ := slices.BinarySearchFunc(d.keys, k, compareKeys)
		d.keys = slices.Insert(d.keys, i, k)
	}
	return b
}

// lingers reports whether a bucket thinner than the per-partition target should wait
// for more records: a commit is one fdatasync and one read-back on the owner, so fat
// commits are the throughput lever, and the producer's 202 does not wait for them.
func (d *Dispatcher) lingers(nowNs int64, b *bucket) bool {
	return len(b.ents) < d.cfg.TargetPerPartition && nowNs < b.since+d.cfg.LingerNs
}

func compareKeys(a, b Key) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	if c := cmpU64(a.Incarnation, b.Incarnation); c != 0 {
		return c
	}
	return cmpU64(uint64(a.Partition), uint64(b.Partition))
}

// startCommit sends the bucket's leading records, up to CommitBytesMax (at least one).
func (d *Dispatcher) startCommit(nowNs int64, b *bucket) int {
	n, size := 0, 0
	for n < len(b.ents) {
		p := len(b.ents[n].rec.Payload)
		if n > 0 && size+p > d.cfg.CommitBytesMax {
			break
		}
		size += p
		n++
	}
	d.nextID++
	id := d.nextID
	batch := b.ents[:n:n]
	recs := make([]wal.Record, n)
	for i, e := range batch {
		assert.That(e.status == stWaiting, "dispatch: record committed twice at once")
		e.status = stInflight
		recs[i] = e.rec
	}
	b.inflight, b.inflightN, b.deadline = id, n, nowNs+d.cfg.CommitTimeoutNs
	d.inflight[id] = b
	d.batches[id] = batch
	d.out.Commits = append(d.out.Commits, Commit{ID: id, Key: b.key, Records: recs})
	return n
}

// adaptWindow grows the window while commits come out thinner than the per-partition
// target (more records per pass make fatter batches) and shrinks it back when they are
// far fatter than needed.
func (d *Dispatcher) adaptWindow(formed, records int) {
	if formed == 0 {
		return
	}
	avg := records / formed
	switch {
	case avg < d.cfg.TargetPerPartition && d.window < d.cfg.WindowMax && d.admitted == len(d.held):
		// Everything is admitted already: a bigger window cannot help.
	case avg < d.cfg.TargetPerPartition && d.window < d.cfg.WindowMax:
		d.window = min(d.window*2, d.cfg.WindowMax)
	case avg > 4*d.cfg.TargetPerPartition && d.window > d.cfg.BaseWindow:
		d.window = max(d.window/2, d.cfg.BaseWindow)
	}
}
