package invariants

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/wal"
)

// A failed partition stays local (issue 13, point 4): a node whose partition failed
// (a failed fdatasync, read-back or ack write) poisons that partition alone and reopens
// it from the disk later. Poison follows one node's disk for the checks "poison":
//   - the node never fails for a partition's failure (PartitionFailure);
//   - a partition is reopened only after an op on its files failed since its last
//     reopen (or the process start): the simulator sees every op's result, the node's
//     word is not taken for it;
//   - a reopen loses the partition's leases and its acks not yet durable: ReopenBetween
//     and AckLostAtReopen tell whether one explains a redelivery (invariants 9 and 10).

// PartRef names one partition of one topic incarnation.
type PartRef struct {
	TopicID uint64
	Index   uint32
}

// PartitionOf reads the partition of a path under a partition root.
func PartitionOf(name string) (PartRef, bool) {
	id, ok := IncarnationOf(name)
	if !ok {
		return PartRef{}, false
	}
	_, rest, _ := strings.Cut(name, "/")
	dirName, _, _ := strings.Cut(rest, "/")
	i, err := strconv.ParseUint(dirName[17:], 10, 32)
	return PartRef{TopicID: id, Index: uint32(i)}, err == nil
}

// WALFullFailure reports whether a node's failure is its ingress WAL's for a full device
// (issue 13, point 5: the WAL waits for space and the node refuses produces instead).
func WALFullFailure(err error) bool {
	return errors.Is(err, wal.ErrFailed) && errors.Is(err, disk.ErrNoSpace)
}

// PartitionFailure reports whether a node's failure is a partition's.
func PartitionFailure(err error) bool {
	return errors.Is(err, plog.ErrFailed) || errors.Is(err, lease.ErrFailed)
}

// reopen is one reopen of a partition: when, and the first failed op it followed.
type reopen struct{ atNs, failedNs int64 }

// Poison is one node's record of failed partition ops and reopens.
type Poison struct {
	failedSince map[PartRef]int64 // the first op failed since the last reopen or start
	failures    map[PartRef][]int64
	ackFailures map[PartRef][]int64 // of those, the ops on its ack files
	reopens     map[PartRef][]reopen
	starts      []int64
	ckptStalls  []int64 // WAL checkpoint writes that found no space
}

// NewPoison returns an empty record.
func NewPoison() *Poison {
	return &Poison{failedSince: map[PartRef]int64{}, failures: map[PartRef][]int64{}, ackFailures: map[PartRef][]int64{},
		reopens: map[PartRef][]reopen{}}
}

// OpDone notes an op's result: a failed op on a partition's file.
func (p *Poison) OpDone(nowNs int64, name string, err error) {
	if name == walCheckpointName && errors.Is(err, disk.ErrNoSpace) {
		p.ckptStalls = append(p.ckptStalls, nowNs)
	}
	k, ok := PartitionOf(name)
	if err == nil || !ok {
		return
	}
	if _, seen := p.failedSince[k]; !seen {
		p.failedSince[k] = nowNs
	}
	p.failures[k] = append(p.failures[k], nowNs)
	if strings.HasPrefix(name, "acks/") {
		p.ackFailures[k] = append(p.ackFailures[k], nowNs)
	}
}

// FailedWithin reports whether an op on k's files failed in [fromNs, toNs].
func (p *Poison) FailedWithin(k PartRef, fromNs, toNs int64) bool {
	for _, f := range p.failures[k] {
		if f >= fromNs && f <= toNs {
			return true
		}
	}
	return false
}

// Restarted: a new process, started at nowNs, opens every partition anew.
func (p *Poison) Restarted(nowNs int64) {
	clear(p.failedSince)
	p.starts = append(p.starts, nowNs)
}

// startBefore is when the process running at t started.
func (p *Poison) startBefore(t int64) int64 {
	var s int64
	for _, x := range p.starts {
		if x <= t {
			s = x
		}
	}
	return s
}

// Reopened notes the node's reopen of k, or the violation: no op of k failed since.
func (p *Poison) Reopened(nowNs int64, k PartRef) error {
	f, ok := p.failedSince[k]
	if !ok {
		return fmt.Errorf("poison: partition %d/%d reopened at %d ns with no failed op on its files since its last reopen or the process start", k.TopicID, k.Index, nowNs)
	}
	delete(p.failedSince, k)
	p.reopens[k] = append(p.reopens[k], reopen{atNs: nowNs, failedNs: f})
	return nil
}

// Failing reports whether an op on k's files failed since its last reopen or the
// process start: the partition may be failed, and draining for its reopen (its acks are
// refused then, its leases about to be lost).
func (p *Poison) Failing(k PartRef) bool {
	_, ok := p.failedSince[k]
	return ok
}

// Reopens counts k's reopens so far.
func (p *Poison) Reopens(k PartRef) int { return len(p.reopens[k]) }

// ReopenBetween reports whether k was reopened in [fromNs, toNs]: a lease taken before
// is gone.
func (p *Poison) ReopenBetween(k PartRef, fromNs, toNs int64) bool {
	for _, r := range p.reopens[k] {
		if r.atNs >= fromNs && r.atNs <= toNs {
			return true
		}
	}
	return false
}

// AckLostAtReopen reports whether an ack of k answered at ackNs may have been lost at a
// reopen: one after the ack and within windowNs of it (the ack-flush window: the old
// lease manager may not have made it durable yet).
func (p *Poison) AckLostAtReopen(k PartRef, ackNs, windowNs int64) bool {
	for _, r := range p.reopens[k] {
		if r.atNs >= ackNs && r.atNs <= ackNs+windowNs {
			return true
		}
	}
	return false
}

// AckNotPersisted reports whether an ack of k answered at ackNs may never have been
// written: an op on k's ack files failed in the process that answered it, before the
// ack's flush (windowNs after it) — ack persistence stops at such a failure and the acks
// after it live in memory only, until the next reopen or crash loses them.
func (p *Poison) AckNotPersisted(k PartRef, ackNs, windowNs int64) bool {
	start := p.startBefore(ackNs)
	for _, f := range p.ackFailures[k] {
		if f >= start && f <= ackNs+windowNs {
			return true
		}
	}
	return false
}

// ReopenBoundNs bounds how long after the heal a failed partition may stay failed: the
// longest wait for its reopen (core/node PartitionReopenMaxNs, 30 s), and its recovery.
const ReopenBoundNs = 35_000_000_000

// AwaitReopened runs a healed simulation until failed (the partitions the nodes show
// failed, as GET /v1/topics shows them) lists none, for at most ReopenBoundNs.
func AwaitReopened(now func() int64, step func() bool, failed func() ([]string, bool)) error {
	if left := AwaitNone(now, step, failed, ReopenBoundNs); len(left) > 0 {
		return fmt.Errorf("poison: %d partitions still failed %d s after the heal: %v", len(left), ReopenBoundNs/1_000_000_000, left[:min(len(left), 5)])
	}
	return nil
}

// walCheckpointName is the ingress WAL's checkpoint file (core/wal's default directory).
const walCheckpointName = wal.DefaultDir + "/" + wal.CheckpointFile

// CheckpointStalledWithin reports whether a WAL checkpoint write found no space in
// [fromNs, toNs]: the durable checkpoint then lags the dispatcher by more than its flush
// interval (core/wal nospace.go retries it), and a crash meanwhile re-dispatches records
// committed longer ago than the re-dispatch bound (a duplicate, never a loss).
func (p *Poison) CheckpointStalledWithin(fromNs, toNs int64) bool {
	for _, f := range p.ckptStalls {
		if f >= fromNs && f <= toNs {
			return true
		}
	}
	return false
}

// FullNsMax is how long a device may stay full before the operator frees it: a node no
// longer dies of a full device (core/wal nospace.go), so the Kills that freed one
// (sim.DiskConfig.FullKillsMax) may never come, and a device full with nothing to compact
// or retire would refuse produces to the end.
const FullNsMax = 1_000_000_000

// FullDevice is the part of a simulated disk the operator acts on.
type FullDevice interface {
	Filled() bool
	FreeFull()
}

// OperatorFreesFull frees d once it was seen full for FullNsMax: it returns when d was
// first seen full (0: not full).
func OperatorFreesFull(d FullDevice, fullSince, nowNs int64) int64 {
	switch {
	case !d.Filled():
		return 0
	case fullSince == 0:
		return max(nowNs, 1)
	case nowNs-fullSince >= FullNsMax:
		d.FreeFull()
		return 0
	}
	return fullSince
}
