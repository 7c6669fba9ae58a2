package clustersim

import (
	"fmt"

	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
	"github.com/narad/narad/sim/simclock"
	"github.com/narad/narad/sim/simnet"
)

// Options are everything a run depends on. Draw makes them from a seed.
type Options struct {
	Seed          uint64
	Nodes         int // the metastore's initial voters: 3 or 5, or 1 (a cluster grown from one)
	Joiners       int // further nodes, outside the initial voters: they join as learners
	Steps         int // events in the fault phase
	Producers     int
	Consumers     int
	Partitions    uint32
	PayloadMax    int
	ThinkMaxNs    int64
	OpLatencyNs   [2]int64
	SyncLatencyNs [2]int64
	CrashGapNs    [2]int64 // 0: no crashes
	RestartNs     [2]int64
	CutGapNs      [2]int64 // 0: no partitions
	// DeadAfterNs: the controller marks a silent member dead (heartbeats every quarter of
	// it, at most 500 ms); CommitTimeoutNs: a remote commit not answered counts as failed.
	DeadAfterNs     int64
	CommitTimeoutNs int64
	// OutageAtNs, OutageNs: one node crashes then and stays down that long (0: no outage).
	OutageAtNs, OutageNs int64
	// Forget: the outage's node is forgotten once marked dead, and never comes back.
	Forget bool
	// Spare: one more node, started once the main topic exists, decommissioned
	// DecommissionAfterNs after its start (decommission.go).
	Spare               bool
	DecommissionAfterNs int64
	CancelOnce          bool // and its decommission is cancelled once (decommission.go)
	// MoveGapNs: in move seeds, a client moves a partition of the main topic to a member
	// drawn at random (or aborts a move in progress) every so often (moves.go); [0 0]: none.
	MoveGapNs [2]int64
	// LocalPartitions: every member keeps a message with neither key nor partition on a
	// partition it owns (node.Config.ProduceLocalPartitions). Not drawn: narad-sim's
	// cluster-local sets it on a seed's drawn options.
	LocalPartitions bool
	// ChurnGapNs: the churn topic is deleted or created again this often (0: no churn).
	ChurnGapNs [2]int64
	// SkewNs, DriftPPM: each node's clock is off by up to SkewNs and runs fast or slow by
	// up to DriftPPM (0: every clock is the simulated time).
	SkewNs, DriftPPM int64
	// SyncPercent of the produces go through the synchronous internal path (ProduceSync:
	// committed at the owners before the answer, no WAL) instead of the WAL-first accept.
	SyncPercent int
	// VisibilityMs is the topics' visibility timeout (leases expire within the run).
	VisibilityMs int64
	// StepGapNs, StepNs: a node's clock steps forward or back by up to StepNs this often
	// (0: no steps).
	StepGapNs [2]int64
	StepNs    int64
	// PreallocBytes: the zeros the WAL and the partition logs write ahead of their
	// records (sim.DrawPreallocBytes).
	PreallocBytes int64
	// Users: the clients are users the admin changes under load every UserGapNs
	// (users.go); without, they act as the system.
	Users     bool
	UserGapNs [2]int64
	Disk      sim.DiskConfig
	Net       simnet.Config
}

// HealBoundNs bounds the heal phase in simulated time.
const HealBoundNs = 120_000_000_000

// FullKillsMax: a device that filled up (FillProb) is freed by the operator once its
// process was killed this many times on it. The broker fails on ENOSPC and every recovery
// rewrites raft.log (a growth), so without an operator a fill crash-loops the node to the
// end of the fault phase (see sim/disk_faults.go).
const FullKillsMax = 3

// Draw derives a run's options from its seed.
func Draw(seed uint64) Options {
	r := rng.New(seed ^ 0x636c757374657273) // "clusters"
	pick := func(ps ...float64) float64 { return ps[r.Intn(len(ps))] }
	ms := func(lo, hi int) int64 { return int64(r.Range(lo, hi)) * 1_000_000 }
	o := Options{
		Seed: seed, Nodes: []int{3, 3, 5}[r.Intn(3)], Steps: r.Range(5000, 15000),
		Producers: r.Range(1, 6), Consumers: r.Range(1, 4), Partitions: uint32(r.Range(2, 9)),
		PayloadMax: r.Range(1, 200), ThinkMaxNs: ms(0, 20),
		OpLatencyNs:   [2]int64{int64(r.Range(1_000, 20_000)), int64(r.Range(20_000, 200_000))},
		SyncLatencyNs: [2]int64{int64(r.Range(50_000, 300_000)), int64(r.Range(300_000, 3_000_000))},
		RestartNs:     [2]int64{ms(1, 50), ms(50, 1500)},
		Disk: sim.DiskConfig{
			ReadErrorProb:    pick(0, 0.01),
			ReadCorruptProb:  pick(0, 0.01),
			WriteCorruptProb: pick(0, 0, 0.002),
			SyncFailProb:     pick(0, 0, 0.001),
			CrashKeepProb:    r.Float64(),
			CrashTearProb:    r.Float64() * 0.5,
			CrashGarbageProb: r.Float64(),
			EIOProb:          sim.DrawEIO(r, 0, 0, 0.0005, 0.002),
			FillProb:         pick(0, 0, 0.0002, 0.001),
			MisdirectProb:    pick(0, 0, 0.001, 0.005),
			RotProb:          0, // rot of an acknowledged record's only copy is loss by definition (see sim/doc.go)
			ProcessProb:      pick(0, 0.3, 0.7),
			LandProb:         r.Float64(),
		},
		Net: simnet.Config{
			DelayMinNs: int64(r.Range(50_000, 500_000)), DelayMaxNs: ms(1, 20),
			DropProb: pick(0, 0.01, 0.05), DupProb: pick(0, 0.01, 0.05),
			StaleProb: pick(0, 0.001, 0.01), StaleMinNs: ms(100, 500), StaleMaxNs: ms(500, 3000),
		},
	}
	o.Disk.FullKillsMax = FullKillsMax
	o.DeadAfterNs = []int64{5_000_000_000, ms(800, 2000)}[r.Intn(2)]
	o.CommitTimeoutNs = []int64{30_000_000_000, ms(1000, 5000)}[r.Intn(2)]
	if r.Chance(0.5) { // one long outage: the controller marks the node dead, records reroute
		o.OutageAtNs, o.OutageNs = ms(200, 2000), ms(3000, 10000)
	}
	if r.Chance(0.3) {
		o.Joiners = 1
	}
	if r.Chance(0.5) {
		o.SkewNs, o.DriftPPM = ms(1, 10_000), int64(r.Range(0, 2000))
	}
	if r.Chance(0.5) {
		o.ChurnGapNs = [2]int64{ms(50, 300), ms(300, 1500)}
	}
	if r.Chance(0.8) {
		o.CrashGapNs = [2]int64{ms(50, 300), ms(300, 3000)}
	}
	if r.Chance(0.7) {
		o.CutGapNs = [2]int64{ms(100, 500), ms(500, 3000)}
	}
	if r.Chance(0.5) {
		o.SyncPercent = r.Range(10, 60)
	}
	// Two producers at least: a lone producer whose synchronous produce waits for a dead
	// owner's commit timeout (30 s) got too little done (seed 164 acked 13 messages).
	o.Producers = max(o.Producers, 2)
	o.VisibilityMs = int64(r.Range(200, 3000))
	if r.Chance(0.3) {
		o.StepGapNs, o.StepNs = [2]int64{ms(200, 1000), ms(1000, 4000)}, ms(5, 2000)
	}
	o.Net.SendFailProb, o.Net.ConnectMaxNs = pick(0, 0, 0.002, 0.02), ms(1, 1000) // sends failed at the sender
	drawLate(&o, r, ms)
	return o
}

// drawLate draws the options that came last, in the order they came, so that a seed's
// earlier options stay those it had before them.
func drawLate(o *Options, r *rng.Rand, ms func(lo, hi int) int64) {
	if r.Chance(0.7) {
		o.Users, o.UserGapNs = true, [2]int64{ms(20, 200), ms(200, 1000)}
	}
	// A cluster grown from one node, the others joining as learners that the leader must
	// make voters (the voters check, voters.go).
	if r.Chance(0.15) {
		o.Joiners, o.Nodes = o.Joiners+o.Nodes-1, 1
	}
	// The outage's node forgotten once dead (forget.go).
	if r.Chance(0.5) && o.OutageNs > 0 {
		o.Forget = true
	}
	// A spare that joins and is decommissioned (decommission.go).
	if r.Chance(0.25) {
		o.Spare, o.Joiners, o.DecommissionAfterNs = true, o.Joiners+1, ms(200, 3000)
		o.CancelOnce = r.Chance(0.3)
	}
	// Moves asked by hand while the faults go on (moves.go).
	if r.Chance(0.5) {
		o.MoveGapNs = [2]int64{ms(50, 200), ms(200, 800)}
	}
	o.PreallocBytes = sim.DrawPreallocBytes(r)
}

func (o Options) String() string {
	d, n := o.Disk, o.Net
	s := fmt.Sprintf("seed=%d nodes=%d joiners=%d steps=%d producers=%d consumers=%d partitions=%d payload_max=%d think_max_ns=%d op_ns=%v sync_ns=%v crash_gap_ns=%v restart_ns=%v cut_gap_ns=%v dead_after_ns=%d commit_timeout_ns=%d outage_ns=[at %d for %d] forget=%v spare=%v decommission_after_ns=%d cancel_once=%v churn_gap_ns=%v skew_ns=%d drift_ppm=%d sync_percent=%d visibility_ms=%d step_gap_ns=%v step_ns=%d users=%v user_gap_ns=%v move_gap_ns=%v prealloc=%d\n"+
		"  disk: syncfail=%g readerr=%g readcorrupt=%g writecorrupt=%g crash_keep=%.3f crash_tear=%.3f crash_garbage=%.3f %s\n"+
		"  net: delay_ns=[%d %d] drop=%g dup=%g stale=%g stale_ns=[%d %d]",
		o.Seed, o.Nodes, o.Joiners, o.Steps, o.Producers, o.Consumers, o.Partitions, o.PayloadMax, o.ThinkMaxNs, o.OpLatencyNs, o.SyncLatencyNs, o.CrashGapNs, o.RestartNs, o.CutGapNs, o.DeadAfterNs, o.CommitTimeoutNs, o.OutageAtNs, o.OutageNs, o.Forget, o.Spare, o.DecommissionAfterNs, o.CancelOnce, o.ChurnGapNs, o.SkewNs, o.DriftPPM, o.SyncPercent, o.VisibilityMs, o.StepGapNs, o.StepNs, o.Users, o.UserGapNs, o.MoveGapNs, o.PreallocBytes,
		d.SyncFailProb, d.ReadErrorProb, d.ReadCorruptProb, d.WriteCorruptProb, d.CrashKeepProb, d.CrashTearProb, d.CrashGarbageProb, d.FaultString(),
		n.DelayMinNs, n.DelayMaxNs, n.DropProb, n.DupProb, n.StaleProb, n.StaleMinNs, n.StaleMaxNs)
	if o.LocalPartitions {
		s += "\n  local_partitions=true"
	}
	return s
}

// clock is node i's clock (simclock.Draw: drawn from the seed and the node, not from
// the run's stream).
func (o Options) clock(i int) simclock.Clock { return simclock.Draw(o.Seed, i, o.SkewNs, o.DriftPPM) }
