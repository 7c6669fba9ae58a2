package node

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/plog"
)

// A failed partition stays local (issue 13, point 4). When a partition's log reports a
// failed fdatasync or read-back, or its lease manager a failed ack write (Ready.Failed),
// that partition alone is poisoned; the node goes on:
//   - its verified prefix stays readable: the log serves reads after it cut back what it
//     could not trust, and the leases work in memory (consume, replay, ack);
//   - commits to it are refused (ErrPartitionFailed: a peer's as CodePartitionFailed,
//     this node's dispatcher's as dispatch.ErrPartitionFailed, which sends the
//     partition's records to a healthy sibling), and so is a produce pinned to it;
//   - GetTopic shows it (PartitionStats.Failed) and Stats counts it;
//   - after PartitionReopenNs (doubling per failure without a commit between, up to
//     PartitionReopenMaxNs) the partition drains (no new consume or ack takes it, its
//     ops and reads in flight complete) and is reopened: both machines are made anew and
//     recover from the durable image, as after a restart. Leases in flight and acks not
//     yet durable are lost with the old machines (their records are delivered again:
//     at-least-once); a reopen that fails is a new failure.

// Reopen delays.
const (
	PartitionReopenNs    = 1_000_000_000  // the first reopen after a failure
	PartitionReopenMaxNs = 30_000_000_000 // the longest wait, after repeated failures
)

// reopenDelay is the wait before the reopen that follows a partition's failures-th
// failure in a row.
func reopenDelay(failures int) int64 {
	return min(int64(PartitionReopenNs)<<min(failures-1, 5), PartitionReopenMaxNs)
}

// poisonPartition turns p failed and schedules its reopen; startQueued, which
// collectPartition runs next, refuses its queued commits. The node fails instead only
// under the planted bug narad_mut_poisonnode.
func (n *Node) poisonPartition(nowNs int64, p *partition, err error) {
	if mutPoisonNode {
		n.fail(err)
		return
	}
	if p.failed != nil {
		return
	}
	p.failed = err
	p.failures++
	p.reopenAt = nowNs + reopenDelay(p.failures)
	n.counts.partFailures++
}

// partitionFailure reports whether err answers a commit refused by a failed partition.
func partitionFailure(err error) bool {
	return errors.Is(err, plog.ErrFailed) || errors.Is(err, lease.ErrFailed) ||
		errors.Is(err, ErrPartitionFailed)
}

// dispatchError is the error a commit's failure is fed to the dispatcher as.
func dispatchError(err error) error {
	if partitionFailure(err) {
		return fmt.Errorf("%w: %v", dispatch.ErrPartitionFailed, err)
	}
	return err
}

// maybeReopen reopens failed partition p once its reopen is due and nothing of its old
// machines is in flight: no commit, no disk op, no read a consume waits for.
func (n *Node) maybeReopen(nowNs int64, p *partition) bool {
	if p.failed == nil || nowNs < p.reopenAt {
		return false
	}
	if mutNoReopen { // the planted bug puts the reopen off for ever
		p.reopenAt = nowNs + PartitionReopenMaxNs
		return false
	}
	p.reopenDue = true // drains: no new consume or ack takes it (ready)
	if p.inflight != nil || n.opsInFlightFor(p.key) || n.readsPendingFor(p.key) {
		return false // a completion collects again
	}
	assert.That(len(p.queued) == 0, "node: a failed partition kept commits queued")
	t, ok := n.meta.TopicByID(p.key.topicID)
	if !ok {
		return false // the topic is gone: dropDeletedPartitions forgets the partition
	}
	p.failed, p.reopenDue, p.logReady, p.leasesReady = nil, false, false, false
	end := p.log.HighWatermark() // the verified prefix: recovery cuts what lies past it
	p.log, p.leases = n.newPartitionMachines(t, p.key, &end)
	n.counts.partReopens++
	if n.cfg.OnPartitionReopen != nil {
		n.cfg.OnPartitionReopen(p.key.topicID, p.key.index)
	}
	p.log.Open(nowNs)
	p.leases.Open(nowNs)
	return true
}

// readsPendingFor reports whether a consume waits for a read of partition k.
func (n *Node) readsPendingFor(k partKey) bool {
	return n.inflight.any(forRead, func(e *entry) bool { return e.read.part == k }) ||
		n.inflight.any(forFetchRead, func(e *entry) bool { return e.part == k })
}

// reopenDeadline is the earliest reopen of a failed partition not yet due (one due and
// draining is reopened by the collect after its last completion).
func (n *Node) reopenDeadline() (int64, bool) {
	var at int64
	for _, pk := range n.partKeys {
		if p := n.parts[pk]; p.failed != nil && !p.reopenDue && (at == 0 || p.reopenAt < at) {
			at = p.reopenAt
		}
	}
	return at, at != 0
}

// FailedPartitions names this node's failed partitions ("topic/index"), in order.
func (n *Node) FailedPartitions() []string {
	var out []string
	for _, pk := range n.partKeys {
		if p := n.parts[pk]; p.failed != nil {
			out = append(out, fmt.Sprintf("%s/%d", p.topic, pk.index))
		}
	}
	return out
}
