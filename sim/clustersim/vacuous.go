package clustersim

import (
	"fmt"
	"maps"
	"slices"
)

// No vacuous seeds: a run whose clients got too little done proves nothing, and fails.

// Floors of a run's work: messages of the main topic answered 202, and deliveries.
const (
	ackedFloor     = 20
	deliveredFloor = 20
)

func (u *run) checkNotVacuous() {
	if u.err != nil {
		return
	}
	if u.stats.AckedMain < ackedFloor || u.stats.Delivered < deliveredFloor {
		u.violate(fmt.Errorf("vacuous: %d messages of the main topic answered 202 and %d deliveries (floors %d and %d); the topic was made at %d ns",
			u.stats.AckedMain, u.stats.Delivered, ackedFloor, deliveredFloor, u.readyAtNs))
	}
}

// Faults counts how often each fault class fired in the run, by name.
func (s Stats) Faults() map[string]uint64 {
	d, n := s.Disk, s.Net
	return map[string]uint64{
		"crash": s.Crashes, "outage": s.Outages, "cut": s.CutChanges, "split": s.Splits,
		"churn": s.ChurnOps, "skew": s.SkewedNodes, "clock-step": s.ClockSteps,
		"disk-sync-fail": d.SyncsFailed, "disk-write-corrupt": d.WritesCorrupted + d.WritesLost,
		"disk-read-error": d.ReadErrors, "disk-read-corrupt": d.ReadsCorrupted,
		"disk-crash-torn": d.PagesTorn + d.SectorsGarbage, "disk-crash-dropped": d.PagesDropped + d.DirOpsLost,
		"net-drop": n.Dropped, "net-dup": n.Duplicated, "net-stale": n.Stale,
		"reroute": s.Rerouted, "walk": s.Walks,
		"user-change": s.UserChanges, "auth-401": s.AuthUnauthorized, "auth-403": s.AuthForbidden,
		"auth-429": s.AuthThrottled, "owner-403": s.OwnerForbidden, "partition-reopen": s.PartitionReopens,
		"forget": s.Forgotten, "forget-given-up": s.GivenUp, "decommission": s.Removed, "decommission-cancel": s.Cancels,
		"move": s.Cutovers,
	}
}

// Checkers counts the real work each checker did in the run, by name.
func (s Stats) Checkers() map[string]uint64 {
	return map[string]uint64{
		"invariant-1+4+5 (images)": s.Checks, "invariant-3+8 (place)": s.PlaceChecks,
		"invariant-9+10 (leases)": s.LeaseChecks, "invariant-9 (ack answers)": s.AckChecks,
		"invariant-4 (replays)": s.ReplayChecks, "watermarks": s.WatermarkReads,
		"dispatch (commits)": s.CommitChecks, "linearizability": s.LinOps, "invariant-6 (leaders)": s.Leaders,
		"invariant-10 (duplicates)": s.Duplicates,
		"access (entry)":            s.GateChecks, "access (owner)": s.OwnerChecks, "dispatch (reroutes)": s.RerouteChecks,
		"readiness (behind)":     s.ReadyBehind,
		"reclaim (dirs removed)": s.ReclaimChecks,
		"poison (reopens)":       s.PartitionReopens,
		"nospace (507s)":         s.NoSpaceRefused,
		"voters (promoted)":      s.Promoted,
		"decommission (removed)": s.DecommissionChecks, "decommission (draining)": s.DrainChecks,
		"moves (epochs)": s.EpochChecks, "moves (after heal)": s.MoveChecks,
	}
}

// Summary is the run's stats as narad-sim prints them, beyond the main line.
func (s Stats) Summary() []string {
	line := func(title string, m map[string]uint64) string {
		out := title + ":"
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out += fmt.Sprintf(" %s=%d", k, m[k])
		}
		return out
	}
	return []string{line("duplicates by cause", s.DupCauses), line("faults", s.Faults()), line("checks", s.Checkers()),
		fmt.Sprintf("forget: proposed=%d given_up=%d owed_again=%d", s.ForgetsProposed, s.GivenUp, s.OwedAgain),
		fmt.Sprintf("decommission: proposed=%d removed=%d cancelled=%d", s.DecommissionsProposed, s.Removed,
			s.Cancels),
		fmt.Sprintf("moves: asked=%d aborts_asked=%d started=%d cut_over=%d", s.MovesAsked, s.AbortsAsked,
			s.MovesStarted, s.Cutovers)}
}
