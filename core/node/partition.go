package node

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
)

// partKey names one partition of one topic incarnation.
type partKey struct {
	topicID uint64
	index   uint32
}

func comparePartKeys(a, b partKey) int {
	if c := cmp.Compare(a.topicID, b.topicID); c != 0 {
		return c
	}
	return cmp.Compare(a.index, b.index)
}

// partition is a partition this node owns: its log and its leases. Both recover before
// it takes commits or consumes; work that arrives meanwhile waits in queued.
type partition struct {
	key         partKey
	topic       string
	log         *plog.Log
	leases      *lease.Manager
	logReady    bool
	leasesReady bool
	inflight    []commitJob // the jobs of the commit in flight (one log commit), nil when none
	commitTok   uint64      // its id in the in-flight table (inflight.go)
	commitAt    int64       // when it started
	queued      []commitJob // commits waiting for recovery or for the one in flight
	consumers   []uint64    // consume tokens waiting for records here
	// A failed partition (poison.go): why, its failures without a commit between, when
	// it is reopened, and whether that time came (it drains).
	failed    error
	failures  int
	reopenAt  int64
	reopenDue bool
	// stale: the log is an older epoch's copy the current epoch does not continue; it is
	// never served, and is removed (moveserve.go, discardStale)
	stale bool
}

func (p *partition) ready() bool {
	return p.logReady && p.leasesReady && !p.reopenDue && !p.stale
}

func partDir(prefix string, k partKey) string {
	return fmt.Sprintf("%s/%016x-%d", prefix, k.topicID, k.index)
}

// partitionFor returns the partition, creating and opening it on first use.
func (n *Node) partitionFor(nowNs int64, t meta.Topic, index uint32) *partition {
	k := partKey{topicID: t.ID, index: index}
	if p := n.parts[k]; p != nil {
		return p
	}
	p := &partition{key: k, topic: t.Name}
	p.log, p.leases = n.newPartitionMachines(t, k, nil)
	n.parts[k] = p
	i, _ := slices.BinarySearchFunc(n.partKeys, k, comparePartKeys)
	n.partKeys = slices.Insert(n.partKeys, i, k)
	p.log.Open(nowNs)
	p.leases.Open(nowNs)
	return p
}

// epochBase is the first offset of an empty log of partition k under its current epoch:
// past every offset of the copy it replaces.
func (n *Node) epochBase(k partKey) uint64 {
	if mutEpochZero {
		return 0
	}
	return meta.EpochBase(n.meta.PartitionEpoch(k.topicID, k.index))
}

// newPartitionMachines makes partition k's log and lease manager, not yet open; a
// reopen gives the verified end of the log it replaces (plog.Config.VerifiedEnd).
func (n *Node) newPartitionMachines(
	t meta.Topic,
	k partKey,
	verifiedEnd *uint64,
) (*plog.Log, *lease.Manager) {
	cfg := plog.Config{
		Dir:             partDir("parts", k),
		SegmentBytesMax: n.cfg.PartitionSegmentBytesMax,
		PreallocBytes:   n.cfg.PartitionPreallocBytes,
		RetentionMs:     t.RetentionMs,
		BaseOffset:      n.epochBase(k),
	}
	if base, copying := n.copyBase(k); copying {
		cfg.BaseOffset = base // a move's copy starts where the source's log does (move.go)
	}
	if mutEpochZero {
		cfg.BaseOffset = 0
	}
	if verifiedEnd != nil {
		cfg.VerifiedEnd, cfg.HasVerifiedEnd = *verifiedEnd, true
	}
	log := plog.New(cfg)
	leases := lease.New(
		lease.Config{Dir: partDir("acks", k), VisibilityTimeoutNs: t.VisibilityTimeoutMs * 1_000_000,
			MaxInFlight: int(
				t.MaxInFlightPerPartition,
			), AckFlushIntervalNs: n.cfg.AckFlushIntervalNs},
		n.rand.Fork(),
	)
	return log, leases
}

// collectPartition routes one partition's outputs.
func (n *Node) collectPartition(nowNs int64, k partKey) bool {
	p := n.parts[k]
	lr := p.log.Ready()
	n.issue(compPlog, k, lr.Ops)
	for _, c := range lr.Commits {
		n.onCommitDone(nowNs, p, c)
	}
	for _, r := range lr.Reads {
		if n.inflight.purposeOf(r.Token) == forFetchRead {
			n.onFetchRead(nowNs, p, r)
			continue
		}
		n.onReadDone(nowNs, p, r)
	}
	if lr.Recovered != nil {
		p.logReady = true
		n.markIfStale(p)
		p.leases.SetOldest(p.log.OldestOffset())
		p.leases.SetHighWatermark(p.log.HighWatermark())
	}
	if p.logReady {
		// Retention moved the oldest offset: the leases drop what it removed (otherwise a
		// removed offset is leased, fails its read, is released and leased again, first,
		// for ever).
		p.leases.SetOldest(p.log.OldestOffset())
	}
	if lr.Failed != nil {
		n.poisonPartition(nowNs, p, fmt.Errorf("partition %s/%d: %w", p.topic, k.index, lr.Failed))
	}
	sr := p.leases.Ready()
	n.issue(compLease, k, sr.Ops)
	if sr.Recovered != nil {
		p.leasesReady = true
	}
	if sr.Failed != nil {
		n.poisonPartition(nowNs, p, fmt.Errorf("acks of %s/%d: %w", p.topic, k.index, sr.Failed))
	}
	moved := len(lr.Ops) > 0 || len(lr.Commits) > 0 || len(lr.Reads) > 0 || lr.Recovered != nil ||
		len(sr.Ops) > 0 || sr.Recovered != nil || lr.Failed != nil || sr.Failed != nil
	if n.startQueued(nowNs, p) || n.maybeReopen(nowNs, p) {
		moved = true
	}
	if lr.Recovered != nil || sr.Recovered != nil {
		n.wakeConsumers(nowNs, p)
	}
	return moved
}
