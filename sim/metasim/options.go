package metasim

import (
	"fmt"

	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
	"github.com/narad/narad/sim/simnet"
)

// Options are everything a run depends on. Draw makes them from a seed.
type Options struct {
	Seed          uint64
	Nodes         int // voters: 3 or 5
	Steps         int // events in the fault phase
	ClientGapNs   [2]int64
	OpLatencyNs   [2]int64
	SyncLatencyNs [2]int64
	CrashGapNs    [2]int64 // 0: no crashes
	RestartNs     [2]int64
	CutGapNs      [2]int64 // time between network partition changes; 0: none
	SnapshotEvery uint64
	DeadAfterNs   int64 // the controller's silence bound
	// SkewNs, DriftPPM: each replica's clock is off by up to SkewNs and runs fast or slow
	// by up to DriftPPM (0: every clock is the simulated time; package simclock).
	SkewNs, DriftPPM int64
	// OutageAtNs, OutageNs: a forget seed's replica crashes then and stays down that
	// long, and the clients forget it (forget.go); 0: no outage.
	OutageAtNs, OutageNs int64
	// Moves: the clients drive partition moves through the log too (moves.go).
	Moves bool
	Disk  sim.DiskConfig
	Net   simnet.Config
}

// HealBoundNs bounds, in simulated time, how long the healed cluster may take to commit a
// fresh entry everywhere and show every answered topic on every replica.
const HealBoundNs = 30_000_000_000

// HealClientGapNs is the client's pace in the heal phase.
const HealClientGapNs = 10_000_000

// Draw derives a run's options from its seed.
func Draw(seed uint64) Options {
	r := rng.New(seed ^ 0x6d65746173696d) // "metasim"
	pick := func(ps ...float64) float64 { return ps[r.Intn(len(ps))] }
	ms := func(lo, hi int) int64 { return int64(r.Range(lo, hi)) * 1_000_000 }
	o := Options{
		Seed: seed, Nodes: []int{3, 3, 5}[r.Intn(3)], Steps: r.Range(4000, 12000),
		ClientGapNs:   [2]int64{ms(1, 5), ms(5, 200)},
		OpLatencyNs:   [2]int64{int64(r.Range(1_000, 20_000)), int64(r.Range(20_000, 200_000))},
		SyncLatencyNs: [2]int64{int64(r.Range(50_000, 300_000)), int64(r.Range(300_000, 3_000_000))},
		RestartNs:     [2]int64{ms(1, 50), ms(50, 2000)},
		SnapshotEvery: uint64(r.Range(3, 40)),
		DeadAfterNs:   ms(300, 3000),
		Disk: sim.DiskConfig{
			SyncFailProb:     pick(0, 0, 0.001, 0.005),
			ReadErrorProb:    pick(0, 0.01, 0.03),
			ReadCorruptProb:  pick(0, 0.01, 0.03),
			WriteCorruptProb: pick(0, 0, 0.002, 0.01),
			CrashKeepProb:    r.Float64(),
			CrashTearProb:    r.Float64() * 0.5,
			CrashGarbageProb: r.Float64(),
		},
		Net: simnet.Config{
			DelayMinNs: int64(r.Range(50_000, 500_000)), DelayMaxNs: ms(1, 30),
			DropProb: pick(0, 0.01, 0.05, 0.2), DupProb: pick(0, 0.01, 0.05),
			StaleProb: pick(0, 0.001, 0.01), StaleMinNs: ms(100, 500), StaleMaxNs: ms(500, 5000),
		},
	}
	if r.Chance(0.85) {
		o.CrashGapNs = [2]int64{ms(20, 200), ms(200, 3000)}
	}
	if r.Chance(0.8) {
		o.CutGapNs = [2]int64{ms(50, 500), ms(500, 3000)}
	}
	// Drawn after the rest, so that the draws above stay what they were.
	if r.Chance(0.5) {
		o.SkewNs, o.DriftPPM = ms(1, 10_000), int64(r.Range(0, 2000))
	}
	o.Disk.EIOProb = sim.DrawEIO(r, 0, 0, 0.0005, 0.002)
	o.Disk.MisdirectProb = pick(0, 0, 0.001, 0.005)
	o.Disk.ProcessProb = pick(0, 0.3, 0.7)
	if r.Chance(0.35) {
		o.OutageAtNs, o.OutageNs = ms(300, 3000), o.DeadAfterNs+ms(2000, 6000)
	}
	o.Moves = r.Chance(0.5)
	return o
}

func (o Options) String() string {
	d, n := o.Disk, o.Net
	return fmt.Sprintf("seed=%d nodes=%d steps=%d client_gap_ns=%v op_ns=%v sync_ns=%v crash_gap_ns=%v restart_ns=%v cut_gap_ns=%v snapshot_every=%d dead_after_ns=%d skew_ns=%d drift_ppm=%d outage_ns=[at %d for %d] moves=%v\n"+
		"  disk: syncfail=%g readerr=%g readcorrupt=%g writecorrupt=%g crash_keep=%.3f crash_tear=%.3f crash_garbage=%.3f %s\n"+
		"  net: delay_ns=[%d %d] drop=%g dup=%g stale=%g stale_ns=[%d %d]",
		o.Seed, o.Nodes, o.Steps, o.ClientGapNs, o.OpLatencyNs, o.SyncLatencyNs, o.CrashGapNs, o.RestartNs, o.CutGapNs, o.SnapshotEvery, o.DeadAfterNs, o.SkewNs, o.DriftPPM, o.OutageAtNs, o.OutageNs, o.Moves,
		d.SyncFailProb, d.ReadErrorProb, d.ReadCorruptProb, d.WriteCorruptProb, d.CrashKeepProb, d.CrashTearProb, d.CrashGarbageProb, d.FaultString(),
		n.DelayMinNs, n.DelayMaxNs, n.DropProb, n.DupProb, n.StaleProb, n.StaleMinNs, n.StaleMaxNs)
}
