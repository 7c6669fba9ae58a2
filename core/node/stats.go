package node

import (
	"github.com/narad/narad/core/dispatch"
	"slices"

	"github.com/narad/narad/core/wal"
)

// Histogram is a fixed-bucket latency histogram fed with durations computed from event
// times (never from a clock read).
type Histogram struct {
	BoundsNs []int64  // upper bounds, ascending
	Counts   []uint64 // per bound, plus one past the last bound
	Count    uint64
	SumNs    int64
}

func newHistogram() Histogram {
	bounds := make([]int64, 14)
	b := int64(50_000) // 50 µs, doubling: up to ~0.8 s
	for i := range bounds {
		bounds[i] = b
		b *= 2
	}
	return Histogram{BoundsNs: bounds, Counts: make([]uint64, len(bounds)+1)}
}

// Observe adds one duration.
func (h *Histogram) Observe(ns int64) {
	i, _ := slices.BinarySearch(h.BoundsNs, ns)
	h.Counts[i]++
	h.Count++
	h.SumNs += ns
}

func (h Histogram) clone() Histogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// Stats is a snapshot of the node's counters for metrics.
type Stats struct {
	WAL            wal.Stats
	BacklogRecords int
	BacklogBytes   int
	LeasesInFlight int
	// ConsumesWaiting counts the entries of the partitions' lists of parked consumes:
	// at most one per parked consume and partition it may take from.
	ConsumesWaiting int
	// PartitionCommits and CommitJobs count this process's partition log commits and the
	// commits (of this node's dispatcher and its peers') they carried: more jobs than
	// commits means queued jobs went together.
	PartitionCommits, CommitJobs uint64
	CommitLatency                Histogram
	Dispatch                     dispatch.Stats // counters since this process started
	// PartitionsFailed are this node's partitions failed now (poison.go); PartitionFailures
	// and PartitionReopens count the failures and reopens since the process started.
	PartitionsFailed                    int
	PartitionFailures, PartitionReopens uint64
	Moves                               MoveStats // the moves this node carried out (move.go)
}

// Stats returns a snapshot.
func (n *Node) Stats() Stats {
	s := Stats{
		WAL:               n.wal.Stats(),
		CommitLatency:     n.counts.commitLatency.clone(),
		PartitionCommits:  n.counts.partCommits,
		CommitJobs:        n.counts.commitJobs,
		PartitionFailures: n.counts.partFailures,
		PartitionReopens:  n.counts.partReopens,
		Moves:             n.moves.stats,
	}
	s.Moves.FreezeNs = s.Moves.FreezeNs.clone()
	if n.disp != nil {
		s.BacklogRecords, s.BacklogBytes = n.disp.Backlog()
		s.Dispatch = n.disp.Stats()
	}
	for _, pk := range n.partKeys {
		p := n.parts[pk]
		s.ConsumesWaiting += len(p.consumers)
		if p.failed != nil {
			s.PartitionsFailed++
		}
		if p.ready() {
			s.LeasesInFlight += p.leases.InFlight()
		}
	}
	return s
}

// statsHighWatermark is the high watermark GetTopic shows for a partition: the log's,
// below which every record is synced and verified.
func statsHighWatermark(p *partition) uint64 {
	hw := p.log.HighWatermark()
	if mutStatsHW {
		for _, job := range p.inflight {
			hw += uint64(len(job.entries))
		}
	}
	return hw
}

// nodeCounts are the node's counters for Stats and /metrics.
type nodeCounts struct {
	partCommits, commitJobs   uint64 // partition log commits, and the jobs they carried
	partFailures, partReopens uint64 // partitions that failed alone, and their reopens (poison.go)
	commitLatency             Histogram
}
