package walsim

import (
	"fmt"

	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/sim"
)

// Options are everything a run depends on. Draw makes them from a seed.
type Options struct {
	Seed          uint64
	Clients       int   // concurrent appenders
	Steps         int   // events processed in the fault phase
	PayloadMax    int   // payloads are 1..PayloadMax bytes
	ThinkMaxNs    int64 // a client waits 0..ThinkMaxNs between an answer and its next append
	OpLatencyNs   [2]int64
	SyncLatencyNs [2]int64
	CrashGapNs    [2]int64 // time between crashes, 0 = no crashes
	RestartNs     int64    // time a crashed node stays down
	CheckpointNs  int64    // period of the stand-in dispatcher
	// RotAtCrashProb: at a crash, one bit of an acknowledged, undispatched record's
	// durable frame flips with this probability (rot.go).
	RotAtCrashProb float64
	// CrashInWriteProb: a crash of the periodic chain waits, with this probability, for
	// the next write the WAL issues and strikes while it is in flight (inwrite.go).
	CrashInWriteProb float64
	Disk             sim.DiskConfig
	WAL              wal.Config
}

// Draw derives a run's options from its seed.
func Draw(seed uint64) Options {
	r := rng.New(seed ^ 0x6e61726164) // "narad"
	pick := func(ps ...float64) float64 { return ps[r.Intn(len(ps))] }
	o := Options{
		Seed:          seed,
		Clients:       r.Range(1, 32),
		Steps:         r.Range(3000, 8000),
		PayloadMax:    r.Range(1, 600),
		ThinkMaxNs:    int64(r.Range(0, 2_000_000)),
		OpLatencyNs:   [2]int64{int64(r.Range(1_000, 20_000)), int64(r.Range(20_000, 200_000))},
		SyncLatencyNs: [2]int64{int64(r.Range(50_000, 300_000)), int64(r.Range(300_000, 5_000_000))},
		RestartNs:     int64(r.Range(1_000_000, 50_000_000)),
		CheckpointNs:  int64(r.Range(1_000_000, 100_000_000)),
		Disk: sim.DiskConfig{
			NoSpaceProb:      pick(0, 0, 0.001, 0.005),
			SyncFailProb:     pick(0, 0, 0.002, 0.01, 0.03),
			ReadErrorProb:    pick(0, 0.01, 0.05),
			ReadCorruptProb:  pick(0, 0.01, 0.05),
			WriteCorruptProb: pick(0, 0, 0.002, 0.01),
			CrashKeepProb:    r.Float64(),
			CrashTearProb:    r.Float64() * 0.5,
			CrashGarbageProb: r.Float64(),
			EIOProb:          sim.DrawEIO(r, 0, 0, 0.001, 0.005),
			FillProb:         pick(0, 0, 0.0005, 0.002),
			FullKillsMax:     3, // an operator frees a device full across 3 kills (sim/disk_faults.go; seed 15 crash-looped on it)
			MisdirectProb:    pick(0, 0, 0.002, 0.01),
			RotProb:          0, // rot of an acknowledged record's only copy is loss by definition (see sim/doc.go)
			ProcessProb:      pick(0, 0.3, 0.7),
			LandProb:         r.Float64(),
		},
		WAL: wal.Config{
			SegmentRotateBytes:       int64(r.Range(512, 16<<10)),
			SegmentBytesMax:          int64(r.Range(32<<10, 256<<10)),
			CheckpointSyncIntervalNs: int64(r.Range(1_000_000, 250_000_000)),
		},
	}
	if r.Chance(0.8) {
		o.CrashGapNs = [2]int64{int64(r.Range(1_000_000, 50_000_000)), int64(r.Range(50_000_000, 2_000_000_000))}
	}
	o.RotAtCrashProb = pick(0, 0, 0.3, 0.7)        // drawn after the rest: the other options of a seed are as before
	o.CrashInWriteProb = pick(0, 0, 0.3, 0.7)      // drawn last, for the same reason
	o.WAL.PreallocBytes = sim.DrawPreallocBytes(r) // after it, for the same reason
	return o
}

func (o Options) String() string {
	d := o.Disk
	return fmt.Sprintf("seed=%d clients=%d steps=%d payload_max=%d think_max_ns=%d op_ns=%v sync_ns=%v crash_gap_ns=%v restart_ns=%d ckpt_ns=%d rot_at_crash=%g crash_in_write=%g\n"+
		"  disk: nospace=%g syncfail=%g readerr=%g readcorrupt=%g writecorrupt=%g crash_keep=%.3f crash_tear=%.3f crash_garbage=%.3f %s\n"+
		"  wal: rotate=%d segmax=%d ckpt_sync_ns=%d prealloc=%d",
		o.Seed, o.Clients, o.Steps, o.PayloadMax, o.ThinkMaxNs, o.OpLatencyNs, o.SyncLatencyNs, o.CrashGapNs, o.RestartNs, o.CheckpointNs, o.RotAtCrashProb, o.CrashInWriteProb,
		d.NoSpaceProb, d.SyncFailProb, d.ReadErrorProb, d.ReadCorruptProb, d.WriteCorruptProb, d.CrashKeepProb, d.CrashTearProb, d.CrashGarbageProb, d.FaultString(),
		o.WAL.SegmentRotateBytes, o.WAL.SegmentBytesMax, o.WAL.CheckpointSyncIntervalNs, o.WAL.PreallocBytes)
}
