package clustersim

import (
	"fmt"
	"slices"

	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/invariants"
)

// Leases and duplicates (invariants 9 and 10). Every leased delivery of a record is
// held to the record's previous lease: while it is live (allowing for the clocks' drift
// and steps) no other delivery may take it, unless the client nacked it or its owner
// crashed meanwhile; a record whose ack was answered OK is delivered again only after a
// crash of its owner inside the ack-flush window. A message delivered at a second record
// (another partition or offset) needs a cause on record: a commit holding it that failed
// or timed out (and may have succeeded), or a crash of the node that accepted it within
// the re-dispatch bound of its first delivery.

// recKey names one record: a partition of a topic incarnation, and an offset.
type recKey struct {
	topicID uint64
	part    uint32
	offset  uint64
}

// leaseState is the latest lease a client got on a record, and what it did with it.
type leaseState struct {
	id        uint64
	callNs    int64 // the consume that got it was sent (the lease was taken after)
	answerNs  int64
	renewedNs int64 // an extend answered OK was sent then (0: none)
	nacked    bool  // a nack was sent for it
	ackCallNs int64 // an ack answered OK was sent then (0: none)
	ackDoneNs int64
	ackMark   ackMark
}

// ackMark is who owned a record's partition when an ack of it was sent (0: not known),
// and how often that node's disk had damaged the partition's ack files by then.
type ackMark struct {
	owner  uint64
	damage uint64
}

// Duplicate causes, as Stats counts them.
const (
	causeExpiry  = "expiry"
	causeNack    = "nack"
	causeCrash   = "owner-crash"
	causeAckLost = "ack-flush-crash"
	// causeAckDamaged: an ack made durable in a file the disk silently damaged after the
	// ack (a corrupted, lost or misdirected write, or a sync that failed) is dropped by
	// the CRC at recovery (core/lease, rows S3, L4, L5).
	causeAckDamaged = "ack-frame-damaged"
	causeRetry      = "commit-retry"
	causeStale      = "commit-copy-to-restarted-owner"
	causeRedisp     = "redispatch"
	// causeRedispStalled: a crash of the accepting process while its WAL's checkpoint
	// writes found no space (the durable checkpoint lagged the re-dispatch bound).
	causeRedispStalled = "redispatch-checkpoint-stalled"
	// causeBehindReroute: the accepting process rerouted records of the message's home
	// partition, then crashed. The skip-set names a home partition's done records only up
	// to its first record not done, and a rerouted one stays not done until its new owner
	// answers: the records after it, done or not, are committed again after the restart,
	// however long before the crash they were (cluster seed 1673).
	causeBehindReroute = "redispatch-behind-reroute"
	causeAmbig         = "ambiguous-produce"
	causeReopen        = "partition-reopen"        // the owner reopened the failed partition: its leases are gone
	causeMove          = "partition-moved"         // the partition moved to another member: its leases ended
	causeAckReopen     = "ack-lost-with-partition" // acked, and the owner reopened the partition before the ack was durable, or its ack files had failed
	causeNoReason      = ""
)

// clockSlackNs is how far a node's clock may have run ahead of simulated time over
// spanNs (drift), plus every step its clocks made meanwhile, plus a margin.
func (u *run) clockSlackNs(fromNs, toNs int64) int64 {
	return (toNs-fromNs)*u.o.DriftPPM*2/1_000_000 + u.stepsBetween(fromNs, toNs) + clockMarginNs
}

// clockMarginNs covers the rounding of clock conversions.
const clockMarginNs = 1_000_000

// ownerCrashed reports whether the owner of the record's partition crashed in [from, to].
func (u *run) ownerCrashed(k recKey, fromNs, toNs int64) bool {
	owner, ok := u.recOwner(k)
	if !ok {
		return true // not known: any crash may have been it
	}
	for _, o := range u.pastOwners(k, owner) { // a move's source held the acks it sent on
		if u.crashedBetween(int(o-1), fromNs, toNs) {
			return true
		}
	}
	return false
}

func (u *run) crashedBetween(i int, fromNs, toNs int64) bool {
	ts := u.crashes[i]
	j, _ := slices.BinarySearch(ts, fromNs)
	return j < len(ts) && ts[j] <= toNs
}

// ackFlushWindowNs bounds how long after its answer an ack may still be lost with its
// owner: the flush interval, one write and one sync, and the clocks. The clocks' slack
// counts the steps made after the ack only: the owner's flush deadline is on its clock,
// and this simulator reschedules a node's timer on its stepped clock, so a step back after
// the ack can hold it for the step's size; a step before the ack cannot, since core/lease
// moves a pending deadline back with the clock at its next reading (seed 983).
func (u *run) ackFlushWindowNs() int64 {
	return ackFlushIntervalNs + u.o.OpLatencyNs[1] + u.o.SyncLatencyNs[1]
}

// leasedDelivery checks a leased delivery of record k holding message id against the
// record's previous lease, and returns the cause when it is a redelivery.
func (u *run) leasedDelivery(k recKey, id uint64, client int, callNs int64) (string, error) {
	prev, ok := u.m.leases[k]
	now := u.s.Now()
	u.m.leases[k] = &leaseState{id: id, callNs: callNs, answerNs: now}
	if !ok {
		return causeNoReason, nil
	}
	if prev.ackCallNs != 0 {
		if callNs < prev.callNs && (u.ownerReopened(k, callNs, now) || u.movedBetween(k, callNs, now)) {
			// Leased for this consume before the acked lease was, and that lease lost
			// with a reopen or a move: a delivery that arrives after the ack, not one
			// made after it (cluster seed 519).
			return causeReopen, nil
		}
		if u.ownerCrashed(k, prev.ackCallNs, prev.ackDoneNs+u.ackFlushWindowNs()+u.clockSlackNs(prev.ackCallNs, now)) {
			return causeAckLost, nil
		}
		if u.ackFilesDamaged(k, prev) {
			return causeAckDamaged, nil // its ack frame may be the write the disk damaged
		}
		if u.ackLostWithPartition(k, prev, now) {
			return causeAckReopen, nil
		}
		owner, _ := u.recOwner(k)
		return "", fmt.Errorf("invariant 9: record %d/%d@%d (message %d) delivered again to client %d after its ack was answered OK at %d ns, with no crash of its owner (node %d, crashes %v) within the ack-flush window, and no damage to its ack files on that node's disk between the ack and its last crash", k.topicID, k.part, k.offset, id, client, prev.ackDoneNs, owner, u.crashes[max(owner, 1)-1])
	}
	if prev.nacked {
		return causeNack, nil
	}
	start := max(prev.callNs, prev.renewedNs)
	if now >= start+u.visibilityNs-u.clockSlackNs(start, now) {
		return causeExpiry, nil
	}
	if u.ownerCrashed(k, prev.callNs, now) {
		return causeCrash, nil
	}
	if u.ownerReopened(k, prev.callNs, now) {
		return causeReopen, nil
	}
	if u.movedBetween(k, prev.callNs, now) {
		return causeMove, nil
	}
	return "", fmt.Errorf("invariant 9: record %d/%d@%d (message %d) delivered to client %d at %d ns while the lease taken by the consume sent at %d ns was live (visibility %d ms)", k.topicID, k.part, k.offset, id, client, now, start, u.visibilityNs/1_000_000)
}

// copyCause explains message id delivered at a second record: a retried commit holding
// it, or a crash of its accepting node within the re-dispatch bound.
func (u *run) copyCause(id uint64) string {
	if u.commits.retried[id] {
		return causeRetry
	}
	if u.commits.redelivered[id] {
		return causeStale
	}
	s := u.m.sent[id]
	first := u.m.firstDelivery[id]
	// The re-dispatch bound (invariants.RedispatchExplains): the checkpoint flush interval
	// plus the longest a commit's answer may take, the commit timeout, since a remote
	// owner's answer can be lost.
	// A clock stepped back delays the checkpoint's flush by as much (the WAL's deadlines
	// wait a backward step out; cluster seed 1673): the steps made since the produce widen it.
	bound := dispatch.RedispatchBoundNs(0, u.o.CommitTimeoutNs)
	for _, c := range u.crashes[s.node] {
		if c >= s.callNs && invariants.RedispatchExplains(first, u.s.Now(), []int64{c}, bound+u.stepsBetween(s.callNs, c)) {
			if s.endNs == c {
				return causeAmbig // lost with its answer: the crash replayed its WAL
			}
			return causeRedisp
		}
		if c >= s.callNs && c < u.s.Now() && u.reroutedBefore(s.node, u.m.places[id][0], c) {
			return causeBehindReroute
		}
		if c >= s.callNs && c < u.s.Now() && u.members[s.node].poison.CheckpointStalledWithin(first-bound, c) {
			return causeRedispStalled
		}
	}
	return causeNoReason
}

// reroutedBefore reports whether node i's process that crashed at crashNs rerouted
// records off partition k's partition (of k's incarnation) before the crash.
func (u *run) reroutedBefore(i int, k recKey, crashNs int64) bool {
	for _, r := range u.reroutes[i] {
		if r.atNs <= crashNs && r.topicID == k.topicID && r.part == k.part && !u.crashedBetween(i, r.atNs, crashNs-1) {
			return true
		}
	}
	return false
}

// noteDelivery records a leased delivery of message id at record k and gives every
// duplicate a cause (invariants 9 and 10).
func (u *run) noteDelivery(k recKey, id uint64, client int, callNs int64) bool {
	cause, err := u.leasedDelivery(k, id, client, callNs)
	if err != nil {
		u.violate(err)
		return false
	}
	u.stats.LeaseChecks++
	if cause == causeNoReason && u.m.delivered[id] > 0 && !slices.Contains(u.m.places[id], k) {
		if cause = u.copyCause(id); cause == causeNoReason {
			s := u.m.sent[id]
			u.violate(fmt.Errorf("invariant 10: message %d (produced on node %d, sync %v, %d..%d ns) delivered at record %d/%d@%d after records %v, with no cause on record (no retried commit, no crash of node %d within the re-dispatch bound of its first delivery at %d ns; its crashes %v)", id, s.node+1, s.sync, s.callNs, s.endNs, k.topicID, k.part, k.offset, u.m.places[id], s.node+1, u.m.firstDelivery[id], u.crashes[s.node]))
			return false
		}
	}
	if !slices.Contains(u.m.places[id], k) {
		u.m.places[id] = append(u.m.places[id], k)
	}
	if u.m.delivered[id] > 0 {
		u.stats.Duplicates++
		if u.stats.DupCauses == nil {
			u.stats.DupCauses = map[string]uint64{}
		}
		u.stats.DupCauses[cause]++
	} else {
		u.m.firstDelivery[id] = u.s.Now()
	}
	return true
}

// ackDir is the directory of a partition's ack files on its owner's disk (core/node).
func ackDir(k recKey) string { return fmt.Sprintf("acks/%016x-%d", k.topicID, k.part) }

// markAck notes record k's owner and its ack-file damage as an ack of k is sent: the
// owner writes the ack after it gets it, so damage from then on may have lost it.
func (u *run) markAck(k recKey) ackMark {
	if owner, ok := u.recOwner(k); ok {
		return ackMark{owner: owner, damage: u.members[owner-1].d.Damage(ackDir(k))}
	}
	return ackMark{}
}

// ackFilesDamaged: the node that owned record k's partition when its ack was sent
// crashed since, and its disk damaged the partition's ack files (sim.Disk.Damage)
// between the ack and that node's last crash. Only then may recovery have lost an ack
// answered outside the ack-flush window.
func (u *run) ackFilesDamaged(k recKey, l *leaseState) bool {
	if l.ackMark.owner == 0 {
		return false
	}
	i := int(l.ackMark.owner - 1)
	if u.crashedBetween(i, l.ackCallNs, u.s.Now()) && u.crashDamage[i][ackDir(k)] > l.ackMark.damage {
		return true
	}
	// The acks moved with the partition (moves.go): a destination that took it over after
	// the ack holds the ack in files of its own, whose damage before its crash counts too
	// (cluster seed 727: the imported acks' frame read back zeroed after a crash).
	for _, c := range u.cutovers[moveKey{k.topicID, k.part}] {
		j := int(c.to - 1)
		if c.atNs >= l.ackCallNs && u.crashedBetween(j, c.atNs, u.s.Now()) && u.crashDamage[j][ackDir(k)] > 0 {
			return true
		}
	}
	return false
}
