package nodesim

import (
	"fmt"

	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// Options are everything a run depends on. Draw makes them from a seed.
type Options struct {
	Seed          uint64
	Producers     int
	Consumers     int
	Topics        int
	PartitionsMax int
	Steps         int   // events processed in the fault phase
	PayloadMax    int   // payload bytes after the id prefix
	BatchMax      int   // messages per produce
	ThinkMaxNs    int64 // a client waits 0..ThinkMaxNs between requests
	VisibilityMs  int64 // topics' visibility timeout
	OpLatencyNs   [2]int64
	SyncLatencyNs [2]int64
	CrashGapNs    [2]int64 // 0: no crashes
	RestartNs     int64
	CheckEvery    int // full invariant-1 check every this many events
	// RetentionMs is the topics' retention (0: the API default, 7 days, so nothing is
	// removed); with it, SegmentBytesMax makes segments small enough to roll, so that
	// retention removes records during the run (only a closed segment is removed).
	RetentionMs     int64
	SegmentBytesMax int64
	// CrashInCommitProb: a crash of the chain waits, with this probability, for the next
	// partition-log write, corrupts it on the device and strikes (incommit.go).
	CrashInCommitProb float64
	// DoomAtNs: when the doomed topic is created, filled and deleted (reclaim.go); 0: never.
	DoomAtNs int64
	// PreallocBytes: the zeros the WAL and the partition logs write ahead of their
	// records (sim.DrawPreallocBytes).
	PreallocBytes int64
	Disk          sim.DiskConfig
}

// FullKillsMax: a device that filled up (FillProb) is freed by the operator once its
// process was killed this many times on it. The broker fails on ENOSPC and every recovery
// rewrites raft.log (a growth), so without an operator a fill crash-loops the node to the
// end of the fault phase (see sim/disk_faults.go).
const FullKillsMax = 3

// Draw derives a run's options from its seed.
func Draw(seed uint64) Options {
	r := rng.New(seed ^ 0x6e6f646573696d) // "nodesim"
	pick := func(ps ...float64) float64 { return ps[r.Intn(len(ps))] }
	o := Options{
		Seed: seed, Producers: r.Range(1, 12), Consumers: r.Range(1, 6), Topics: r.Range(1, 3),
		PartitionsMax: r.Range(1, 4), Steps: r.Range(3000, 8000), PayloadMax: r.Range(1, 300),
		BatchMax: r.Range(1, 8), ThinkMaxNs: int64(r.Range(0, 5_000_000)),
		VisibilityMs:  int64(r.Range(20, 500)),
		OpLatencyNs:   [2]int64{int64(r.Range(1_000, 20_000)), int64(r.Range(20_000, 200_000))},
		SyncLatencyNs: [2]int64{int64(r.Range(50_000, 300_000)), int64(r.Range(300_000, 3_000_000))},
		RestartNs:     int64(r.Range(1_000_000, 30_000_000)),
		CheckEvery:    r.Range(20, 200),
		Disk: sim.DiskConfig{
			NoSpaceProb:      pick(0, 0, 0.001),
			SyncFailProb:     pick(0, 0, 0.002, 0.01),
			ReadErrorProb:    pick(0, 0.01, 0.03),
			ReadCorruptProb:  pick(0, 0.01, 0.03),
			WriteCorruptProb: pick(0, 0, 0.002, 0.01),
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
	}
	o.Disk.FullKillsMax = FullKillsMax
	if r.Chance(0.25) {
		o.RetentionMs, o.SegmentBytesMax = int64(r.Range(100, 1500)), int64(r.Range(2_000, 20_000))
	}
	if r.Chance(0.85) {
		o.CrashGapNs = [2]int64{int64(r.Range(5_000_000, 50_000_000)), int64(r.Range(50_000_000, 1_000_000_000))}
	}
	o.CrashInCommitProb = pick(0, 0, 0.2, 0.5) // drawn last: the other options of a seed are as before
	if r.Chance(0.5) {                         // drawn after it, for the same reason
		o.DoomAtNs = int64(r.Range(20_000_000, 1_500_000_000))
	}
	o.PreallocBytes = sim.DrawPreallocBytes(r) // drawn after them, for the same reason
	return o
}

func (o Options) String() string {
	d := o.Disk
	return fmt.Sprintf("seed=%d producers=%d consumers=%d topics=%d partitions_max=%d steps=%d payload_max=%d batch_max=%d think_max_ns=%d visibility_ms=%d op_ns=%v sync_ns=%v crash_gap_ns=%v restart_ns=%d check_every=%d retention_ms=%d segment_bytes_max=%d crash_in_commit=%g doom_at_ns=%d prealloc=%d\n"+
		"  disk: nospace=%g syncfail=%g readerr=%g readcorrupt=%g writecorrupt=%g crash_keep=%.3f crash_tear=%.3f crash_garbage=%.3f %s",
		o.Seed, o.Producers, o.Consumers, o.Topics, o.PartitionsMax, o.Steps, o.PayloadMax, o.BatchMax, o.ThinkMaxNs, o.VisibilityMs,
		o.OpLatencyNs, o.SyncLatencyNs, o.CrashGapNs, o.RestartNs, o.CheckEvery, o.RetentionMs, o.SegmentBytesMax, o.CrashInCommitProb, o.DoomAtNs, o.PreallocBytes,
		d.NoSpaceProb, d.SyncFailProb, d.ReadErrorProb, d.ReadCorruptProb, d.WriteCorruptProb, d.CrashKeepProb, d.CrashTearProb, d.CrashGarbageProb, d.FaultString())
}
