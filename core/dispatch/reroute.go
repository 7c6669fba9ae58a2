package dispatch

import (
	"cmp"
	"slices"
)

// rerouteStuck moves the records of every partition that cannot take them to a live
// sibling partition of the same topic incarnation: the seed's availability trade. A
// partition is stuck when membership says its owner is dead, or when its owner answered
// its last commit that the partition failed (ErrPartitionFailed: a failed fdatasync or
// read-back poisoned it until its reopen), at once, for PartitionFailedHoldNs after that
// answer; failed commits alone never make it so (an owner that is alive gets its records
// once it can take them: a cut, a slow disk or a restart must not scatter a partition's
// records over its siblings). Only records waiting are moved: a commit in flight is never
// rerouted (its answer, or its timeout, decides first), so no record is ever in two
// commits at once.
func (d *Dispatcher) rerouteStuck(nowNs int64) {
	var moves []Key
	for _, k := range d.keys {
		if d.stuck(nowNs, d.buckets[k]) {
			moves = append(moves, k)
		}
	}
	for _, k := range moves { // apart from the scan: rerouting may add buckets to d.keys
		b := d.buckets[k]
		if to, ok := d.liveSibling(nowNs, k); ok {
			d.reroute(nowNs, b, to)
		}
	}
}

// stuck reports whether a bucket's waiting records should go elsewhere.
func (d *Dispatcher) stuck(nowNs int64, b *bucket) bool {
	movable := len(b.ents) - b.inflightN // a commit in flight is never rerouted
	if mutRerouteInflight {
		movable = len(b.ents)
	}
	if movable == 0 || b.discard {
		return false
	}
	if mutRerouteAlive && b.failures >= 3 {
		return true
	}
	if d.failedWithin(nowNs, b) {
		return true
	}
	_, dead := d.cat.Owner(b.key.Incarnation, b.key.Partition)
	return dead
}

// partitionFailed reports whether k's owner answered, within PartitionFailedHoldNs, that
// the partition failed.
func (d *Dispatcher) partitionFailed(nowNs int64, k Key) bool {
	b, ok := d.buckets[k]
	return ok && d.failedWithin(nowNs, b)
}

// failedWithin reports whether the bucket's owner answered, within
// PartitionFailedHoldNs, that its partition failed, and still owns it (cluster seed
// 2284: a forgotten owner's failure made the dispatcher reroute away from the live
// member that took the partition).
func (d *Dispatcher) failedWithin(nowNs int64, b *bucket) bool {
	if b.failedAt == 0 || nowNs >= b.failedAt+PartitionFailedHoldNs {
		return false
	}
	owner, _ := d.cat.Owner(b.key.Incarnation, b.key.Partition)
	return owner == b.failedOwner
}

// liveSibling picks the first partition after k's (wrapping) whose owner is alive and
// whose owner did not report it failed, and, when k's owner is dead, that is not k's
// owner: rerouting to another partition of the same failing node would not help (one of
// its partitions that failed alone is another matter).
func (d *Dispatcher) liveSibling(nowNs int64, k Key) (uint32, bool) {
	id, parts, ok := d.cat.Topic(k.Topic)
	if !ok || id != k.Incarnation || k.Partition >= parts {
		return 0, false // the topic looks gone: the discard path decides, not a reroute
	}
	owner, ownerDead := d.cat.Owner(k.Incarnation, k.Partition)
	for i := uint32(1); i < parts; i++ {
		p := (k.Partition + i) % parts
		sib := Key{Topic: k.Topic, Incarnation: k.Incarnation, Partition: p}
		if o, dead := d.cat.Owner(k.Incarnation, p); !dead && (o != owner || !ownerDead) &&
			!d.partitionFailed(nowNs, sib) {
			return p, true
		}
	}
	return 0, false
}

// reroute moves b's waiting records to partition to of the same topic incarnation. The
// records keep their seqs (the checkpoint still waits for them) and change only their
// partition; their WAL copies keep the original one, so a crash replays them there and
// they are rerouted again if the owner is still down.
func (d *Dispatcher) reroute(nowNs int64, b *bucket, to uint32) {
	moving := b.ents[b.inflightN:]
	if mutRerouteInflight {
		moving = d.takeInflight(b)
	}
	t := d.bucket(Key{Topic: b.key.Topic, Incarnation: b.key.Incarnation, Partition: to})
	if len(t.ents) == t.inflightN {
		t.since = nowNs
	}
	for _, e := range moving {
		e.rec.Partition = to
		t.ents = append(t.ents, e)
	}
	waiting := t.ents[t.inflightN:]
	slices.SortFunc(waiting, func(x, y *entry) int { return cmp.Compare(x.rec.Seq, y.rec.Seq) })
	d.stats.Rerouted += uint64(len(moving))
	if d.cfg.OnReroute != nil && len(moving) > 0 {
		d.cfg.OnReroute(b.key, to, len(moving))
	}
	b.ents = b.ents[:b.inflightN]
	b.failures, b.notBefore = 0, 0
}

// takeInflight serves only the mutation build: it forgets the bucket's commit in flight
// (its answer will be ignored) and hands over every record, as if none were in flight.
func (d *Dispatcher) takeInflight(b *bucket) []*entry {
	if b.inflight != 0 {
		delete(d.inflight, b.inflight)
		delete(d.batches, b.inflight)
		for _, e := range b.ents[:b.inflightN] {
			e.status = stWaiting
		}
		b.inflight, b.inflightN = 0, 0
	}
	return b.ents
}
