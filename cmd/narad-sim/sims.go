package main

import (
	"fmt"

	"github.com/narad/narad/sim/clustersim"
	"github.com/narad/narad/sim/metasim"
	"github.com/narad/narad/sim/nodesim"
	"github.com/narad/narad/sim/walsim"
)

// outcome is one seed's run, whichever simulation ran it.
type outcome struct {
	options   string // the options drawn from the seed
	stats     []string
	trace     string
	violation error
}

// simulations by -sim name. "node" is the whole single-node broker; "wal" is the ingress
// WAL alone (the foundation issue's simulator).
var simulations = map[string]func(seed uint64) outcome{
	"node":    runNode,
	"wal":     runWAL,
	"meta":    runMeta,
	"cluster": func(seed uint64) outcome { return runCluster(clustersim.Draw(seed)) },
	// cluster-nousers: a cluster seed with its clients acting as the system, as every
	// seed did before the simulator had users (the scenario of an older regression seed).
	"cluster-nousers": func(seed uint64) outcome {
		o := clustersim.Draw(seed)
		o.Users = false
		return runCluster(o)
	},
	// cluster-local: a cluster seed whose members keep keyless messages on their own
	// partitions (narad serve -produce-local-partitions).
	"cluster-local": func(seed uint64) outcome {
		o := clustersim.Draw(seed)
		o.LocalPartitions = true
		return runCluster(o)
	},
}

func runCluster(o clustersim.Options) outcome {
	res := clustersim.Run(o)
	s, n := res.Stats, res.Stats.Net
	out := outcome{
		options: o.String(), trace: res.Trace, violation: res.Violation,
		stats: []string{
			fmt.Sprintf("stats: produced=%d synchronous=%d gave_up=%d acked=%d refused=%d ambiguous=%d delivered=%d duplicates=%d crashes=%d node_failures=%d leaders=%d rerouted=%d discarded=%d churn_ops=%d cut_changes=%d heal_ms=%d image_checks=%d",
				s.Produced, s.Synchronous, s.GaveUp, s.Acked, s.Refused, s.Ambiguous, s.Delivered, s.Duplicates, s.Crashes, s.Failures, s.Leaders, s.Rerouted, s.Discarded, s.ChurnOps, s.CutChanges, s.HealNs/1_000_000, s.Checks),
			fmt.Sprintf("net: sent=%d delivered=%d dropped=%d duplicated=%d stale=%d cut_dropped=%d",
				n.Sent, n.Delivered, n.Dropped, n.Duplicated, n.Stale, n.CutDropped),
			fmt.Sprintf("access: user_ops=%d user_changes=%d refused_401=%d refused_429=%d refused_403=%d not_ready_503=%d gate_checks=%d owner_checks=%d owner_403=%d",
				s.UserOps, s.UserChanges, s.AuthUnauthorized, s.AuthThrottled, s.AuthForbidden, s.AuthNotReady, s.GateChecks, s.OwnerChecks, s.OwnerForbidden),
		},
	}
	out.stats = append(out.stats, s.Summary()...)
	return out
}

func runMeta(seed uint64) outcome {
	o := metasim.Draw(seed)
	res := metasim.Run(o)
	s, n := res.Stats, res.Stats.Net
	return outcome{
		options: o.String(), trace: res.Trace, violation: res.Violation,
		stats: []string{
			fmt.Sprintf("stats: proposed=%d acked=%d refused=%d lost=%d crashes=%d store_failures=%d leaders=%d snapshots_sent=%d applied_checks=%d dead_marks=%d cut_changes=%d heal_ms=%d",
				s.Proposed, s.Acked, s.Refused, s.Lost, s.Crashes, s.Failures, s.Leaders, s.SnapshotsSent, s.AppliedChecks, s.DeadMarks, s.CutChanges, s.HealNs/1_000_000),
			fmt.Sprintf("net: sent=%d delivered=%d dropped=%d duplicated=%d stale=%d cut_dropped=%d; disk: syncs_failed=%d writes_damaged=%d",
				n.Sent, n.Delivered, n.Dropped, n.Duplicated, n.Stale, n.CutDropped, s.DiskSyncFails, s.DiskWritesDamaged),
			fmt.Sprintf("forget: outages=%d proposed=%d forgotten=%d checks=%d",
				s.Outages, s.ForgetsProposed, s.Forgotten, s.ForgetChecks),
			fmt.Sprintf("moves: proposed=%d applied=%d epoch_checks=%d", s.MovesProposed, s.MovesApplied, s.EpochChecks),
		},
	}
}

func runWAL(seed uint64) outcome {
	o := walsim.Draw(seed)
	res := walsim.Run(o)
	s, d := res.Stats, res.Stats.Disk
	return outcome{
		options: o.String(), trace: res.Trace, violation: res.Violation,
		stats: []string{
			fmt.Sprintf("stats: appends=%d acked=%d failed=%d ambiguous=%d crashes=%d wal_failures=%d recoveries=%d checks=%d",
				s.Appends, s.Acked, s.Failed, s.Ambiguous, s.Crashes, s.WALFailures, s.Recoveries, s.Checks),
			diskLine(d.SyncsFailed, d.SyncPagesLost, d.WritesCorrupted, d.WritesLost, d.ReadsCorrupted, d.ReadErrors,
				d.NoSpaceInjected, d.PagesKept, d.PagesDropped, d.PagesTorn, d.SectorsGarbage, d.DirOpsLost),
		},
	}
}

func runNode(seed uint64) outcome {
	o := nodesim.Draw(seed)
	res := nodesim.Run(o)
	s, d := res.Stats, res.Stats.Disk
	return outcome{
		options: o.String(), trace: res.Trace, violation: res.Violation,
		stats: append(s.Lines(),
			diskLine(d.SyncsFailed, d.SyncPagesLost, d.WritesCorrupted, d.WritesLost, d.ReadsCorrupted, d.ReadErrors,
				d.NoSpaceInjected, d.PagesKept, d.PagesDropped, d.PagesTorn, d.SectorsGarbage, d.DirOpsLost)),
	}
}

func diskLine(v ...uint64) string {
	return fmt.Sprintf("disk: syncs_failed=%d pages_lost=%d writes_corrupted=%d writes_lost=%d reads_corrupted=%d read_errors=%d nospace=%d pages_kept=%d dropped=%d torn=%d garbage_sectors=%d dirops_lost=%d",
		v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11])
}
