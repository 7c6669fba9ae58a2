package nodesim

import (
	"fmt"
	"strings"

	"github.com/narad/narad/sim"
)

// Stats summarises a run: what the clients did, which faults fired and how much work
// each checker did (a checker that never ran proves nothing).
type Stats struct {
	Produced, Acked, Refused, Ambiguous uint64
	Delivered, Duplicates, Acks         uint64
	Replayed, Removed410                uint64 // replays answered a record, and 410
	Crashes, NodeFailures, Recoveries   uint64
	CommitCrashes                       uint64 // crashes placed inside a commit (incommit.go)
	Checks, HealEvents                  uint64 // invariant-1 image checks; heal-phase events
	Dups                                [dupCauses]uint64

	// The checkers' work.
	VisibilityChecked uint64 // invariant 4: delivered offsets compared with the durable image
	BytesChecked      uint64 // invariant 3: records read compared with their produce
	PlaceChecked      uint64 // invariant 8: the same, for topic, partition and key
	LeaseChecked      uint64 // invariants 9 and 10: leased deliveries checked against the lease model
	AcksChecked       uint64 // invariant 9: ack, extend and nack answers checked
	RetentionChecked  uint64 // invariant 4: 410s and oldest offsets checked against the retention
	RedeliveryChecked uint64 // invariant 9: records checked to be settled or delivered again at the end
	HistoryOps        uint64 // linearizability: partition-history operations checked
	ReclaimChecks     uint64 // reclaim: directories removed, checked (reclaim.go)
	DoomedDeletes     uint64 // the doomed topic deleted (reclaim.go)
	PartitionReopens  uint64 // failed partitions reopened, each held to a failed op (poison.go)
	NoSpaceRefused    uint64 // produces refused for a full WAL device (507): definite refusals, never delivered

	Disk sim.DiskStats
}

// Floors below which a seed proves too little (point 5 of issue 11): the option draw
// makes every seed clear them (TestNoVacuousSeeds over seeds 1-500 of narad-sim).
const (
	AckedFloor     = 100
	DeliveredFloor = 100
)

func (u *run) checkVacuous() {
	if u.stats.Acked < AckedFloor || u.stats.Delivered < DeliveredFloor {
		u.violate(fmt.Errorf("vacuous: %d messages acknowledged and %d delivered, under the floors of %d and %d",
			u.stats.Acked, u.stats.Delivered, AckedFloor, DeliveredFloor))
	}
}

// Faults are how often each fault class fired, by name.
func (s Stats) Faults() map[string]uint64 {
	d := s.Disk
	return map[string]uint64{
		"crash": s.Crashes, "node_failure": s.NodeFailures, "sync_failed": d.SyncsFailed,
		"write_corrupted": d.WritesCorrupted, "write_lost": d.WritesLost, "read_error": d.ReadErrors,
		"read_corrupted": d.ReadsCorrupted, "nospace": d.NoSpaceInjected, "page_torn": d.PagesTorn,
		"page_dropped": d.PagesDropped, "sector_garbage": d.SectorsGarbage, "dirop_lost": d.DirOpsLost,
		"retention_410": s.Removed410, "crash_in_commit": s.CommitCrashes,
		"topic_deleted": s.DoomedDeletes, "partition_reopen": s.PartitionReopens,
	}
}

// Checkers are how much work each checker did, by name.
func (s Stats) Checkers() map[string]uint64 {
	return map[string]uint64{
		"invariant-1": s.Checks, "invariant-3": s.BytesChecked, "invariant-4": s.VisibilityChecked,
		"invariant-4-retention": s.RetentionChecked, "invariant-8": s.PlaceChecked,
		"invariant-9": s.LeaseChecked, "invariant-9-acks": s.AcksChecked,
		"invariant-9-redelivery": s.RedeliveryChecked, "invariant-10": s.Duplicates,
		"linearizability": s.HistoryOps, "reclaim": s.ReclaimChecks, "poison": s.PartitionReopens, "nospace": s.NoSpaceRefused,
	}
}

// Lines are the stats lines narad-sim prints (the disk line is printed apart).
func (s Stats) Lines() []string {
	var dups strings.Builder
	for i, n := range s.Dups {
		fmt.Fprintf(&dups, " %s=%d", dupNames[i], n)
	}
	return []string{
		fmt.Sprintf("stats: produced=%d acked=%d refused=%d ambiguous=%d delivered=%d duplicates=%d acks=%d replayed=%d removed_410=%d crashes=%d crashes_in_commit=%d node_failures=%d recoveries=%d heal_events=%d",
			s.Produced, s.Acked, s.Refused, s.Ambiguous, s.Delivered, s.Duplicates, s.Acks, s.Replayed, s.Removed410,
			s.Crashes, s.CommitCrashes, s.NodeFailures, s.Recoveries, s.HealEvents),
		"duplicates by cause:" + dups.String(),
		fmt.Sprintf("checked: inv1_images=%d inv3_bytes=%d inv4_offsets=%d inv4_retention=%d inv8_places=%d inv9_leases=%d inv9_acks=%d inv9_redelivery=%d inv10_duplicates=%d history_ops=%d reclaim_dirs=%d topics_deleted=%d partition_reopens=%d nospace_507=%d",
			s.Checks, s.BytesChecked, s.VisibilityChecked, s.RetentionChecked, s.PlaceChecked, s.LeaseChecked,
			s.AcksChecked, s.RedeliveryChecked, s.Duplicates, s.HistoryOps, s.ReclaimChecks, s.DoomedDeletes, s.PartitionReopens, s.NoSpaceRefused),
	}
}
