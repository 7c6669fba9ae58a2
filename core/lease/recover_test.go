package lease_test

import (
	"errors"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// One test per row of the recovery decision table in doc.go.

const (
	snapPath = testDir + "/" + lease.SnapFile
	tmpPath  = testDir + "/" + lease.SnapTmpFile
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeFile lays down a durable file.
func writeFile(t *testing.T, d *sim.Disk, name string, b []byte) {
	t.Helper()
	must(t, d.Create(name))
	must(t, d.WriteAt(name, 0, b))
	must(t, d.Sync(name))
	must(t, d.SyncDir(testDir))
}

func frames(fs ...[]uint64) []byte {
	var b []byte
	for _, f := range fs { // f[0] is the floor, the rest the offsets
		b = lease.AppendAckFrame(b, f[0], f[1:])
	}
	return b
}

// recoverFrom opens a manager on d with high-watermark hw and returns the harness.
func recoverFrom(t *testing.T, d *sim.Disk, hw uint64) *harness {
	t.Helper()
	h := &harness{t: t, cfg: lease.Config{Dir: testDir, VisibilityTimeoutNs: vis, AckFlushIntervalNs: 200}, d: d, hw: hw}
	h.open()
	return h
}

func newDisk() *sim.Disk { return sim.NewDisk(rng.New(1), sim.DiskConfig{}) }

func TestRecoveryS1L1EmptyDirectory(t *testing.T) {
	h := recoverFrom(t, newDisk(), 3)
	r := h.recovered
	if !hasDecision(r, "S1") || !hasDecision(r, "L1") || r.AckFloor != 0 || r.Acked != 0 {
		t.Fatalf("recovered %+v", r)
	}
	if _, ok := h.d.DurableFiles()[logPath]; !ok {
		t.Fatalf("acks.log not durable after recovery: %v", h.d.DurableFiles())
	}
	if got := offsets(h.lease(5)); got != "0,1,2" {
		t.Fatalf("leases %s", got)
	}
}

func TestRecoveryS2Snapshot(t *testing.T) {
	d := newDisk()
	writeFile(t, d, snapPath, lease.EncodeSnapshot(5, []uint64{7, 9, 70}))
	writeFile(t, d, logPath, nil)
	h := recoverFrom(t, d, 12)
	r := h.recovered
	if !hasDecision(r, "S2") || r.AckFloor != 5 || r.Acked != 3 {
		t.Fatalf("recovered %+v", r)
	}
	if got := offsets(h.lease(10)); got != "5,6,8,10,11" {
		t.Fatalf("leases %s", got)
	}
}

func TestRecoverySnapshotAndLogUnion(t *testing.T) {
	d := newDisk()
	writeFile(t, d, snapPath, lease.EncodeSnapshot(5, []uint64{7, 9}))
	// An old frame below the snapshot, one that raises the floor past 7, one running ahead.
	writeFile(t, d, logPath, frames([]uint64{2, 3, 4}, []uint64{8, 10}, []uint64{6, 12}))
	h := recoverFrom(t, d, 14)
	if r := h.recovered; r.AckFloor != 8 || r.Acked != 3 {
		t.Fatalf("recovered %+v", r)
	}
	if got := offsets(h.lease(10)); got != "8,11,13" {
		t.Fatalf("leases %s", got)
	}
}

func TestRecoveryS3DamagedSnapshotIgnored(t *testing.T) {
	d := newDisk()
	snap := lease.EncodeSnapshot(5, []uint64{7})
	snap[len(snap)-1] ^= 0x40
	writeFile(t, d, snapPath, snap)
	writeFile(t, d, logPath, frames([]uint64{2}))
	h := recoverFrom(t, d, 4)
	if r := h.recovered; !hasDecision(r, "S3") || r.AckFloor != 2 || h.failed != nil {
		t.Fatalf("recovered %+v, %v", r, h.failed)
	}
}

func TestRecoveryT1RemovesLeftoverTmp(t *testing.T) {
	d := newDisk()
	writeFile(t, d, tmpPath, []byte("half a snapshot"))
	writeFile(t, d, logPath, frames([]uint64{3}))
	h := recoverFrom(t, d, 5)
	if r := h.recovered; !hasDecision(r, "T1") || r.AckFloor != 3 {
		t.Fatalf("recovered %+v", r)
	}
	if _, ok := d.DurableFiles()[tmpPath]; ok {
		t.Fatalf("acks.snap.tmp still there")
	}
}

func TestRecoveryL2L6FramesCleanEnd(t *testing.T) {
	d := newDisk()
	writeFile(t, d, logPath, frames([]uint64{0, 1, 2}, []uint64{0, 4}, []uint64{0, 3}))
	h := recoverFrom(t, d, 6)
	r := h.recovered
	if !hasDecision(r, "L2") || !hasDecision(r, "L6") || r.AckFloor != 0 || r.Acked != 4 {
		t.Fatalf("recovered %+v", r)
	}
	if got := offsets(h.lease(10)); got != "0,5" {
		t.Fatalf("leases %s", got)
	}
}

func TestRecoveryL3RereadsCorruptedReads(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{ReadCorruptProb: 0.3, ReadErrorProb: 0.1})
		d.SetFaults(false)
		writeFile(t, d, snapPath, lease.EncodeSnapshot(1, []uint64{3}))
		writeFile(t, d, logPath, frames([]uint64{1, 5}, []uint64{1, 7}, []uint64{1, 9}))
		d.SetFaults(true)
		h := recoverFrom(t, d, 11)
		if h.failed != nil || h.recovered.AckFloor != 1 || h.recovered.Acked != 4 ||
			hasDecision(h.recovered, "L4") || hasDecision(h.recovered, "L5") || hasDecision(h.recovered, "S3") {
			t.Fatalf("seed %d: %+v %v", seed, h.recovered, h.failed)
		}
	}
}

func TestRecoveryL4SkipsDamagedMiddleFrame(t *testing.T) {
	d := newDisk()
	a, b := frames([]uint64{0, 1}), frames([]uint64{0, 3})
	log := frames([]uint64{0, 1}, []uint64{0, 3}, []uint64{0, 5})
	log[len(a)+len(b)-2] ^= 1 // inside frame b's offset
	writeFile(t, d, logPath, log)
	h := recoverFrom(t, d, 7)
	r := h.recovered
	if !hasDecision(r, "L4") || r.Acked != 2 || !h.m.Acked(1) || h.m.Acked(3) || !h.m.Acked(5) {
		t.Fatalf("recovered %+v", r)
	}
	if st := h.m.Stats(); st.Compactions != 1 || len(d.DurableFiles()[logPath]) != 0 {
		t.Fatalf("the damaged log was not compacted away: %+v", st)
	}
	checkCleanAfterRecovery(t, h, "L4")
}

func TestRecoveryL5TruncatesTornTail(t *testing.T) {
	d := newDisk()
	good := frames([]uint64{0, 1}, []uint64{0, 3})
	torn := frames([]uint64{0, 5})
	writeFile(t, d, logPath, append(append([]byte{}, good...), torn[:len(torn)-3]...))
	h := recoverFrom(t, d, 7)
	r := h.recovered
	if !hasDecision(r, "L5") || r.Acked != 2 || h.m.Acked(5) {
		t.Fatalf("recovered %+v", r)
	}
	if got := len(d.DurableFiles()[logPath]); got != len(good) {
		t.Fatalf("durable size after the cut %d, want %d", got, len(good))
	}
	checkCleanAfterRecovery(t, h, "L5")
}

func TestRecoveryL5ZeroTail(t *testing.T) {
	d := newDisk()
	good := frames([]uint64{2, 4})
	writeFile(t, d, logPath, append(append([]byte{}, good...), make([]byte, 100)...))
	h := recoverFrom(t, d, 7)
	if r := h.recovered; !hasDecision(r, "L5") || r.AckFloor != 2 || r.Acked != 1 {
		t.Fatalf("recovered %+v", r)
	}
}

func TestRecoveryF1PersistentReadErrors(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{ReadErrorProb: 1})
	d.SetFaults(false)
	writeFile(t, d, logPath, frames([]uint64{2}))
	d.SetFaults(true)
	h := recoverFrom(t, d, 3)
	if !errors.Is(h.failed, lease.ErrFailed) || h.recovered != nil {
		t.Fatalf("want recovery failure, got %v %+v", h.failed, h.recovered)
	}
	if rs := h.m.Lease(h.now, 1); rs != nil {
		t.Fatalf("leased after a failed recovery")
	}
}

func TestRecoveryAppliesOldest(t *testing.T) {
	d := newDisk()
	writeFile(t, d, logPath, frames([]uint64{2, 4, 9}))
	h := &harness{t: t, cfg: lease.Config{Dir: testDir}, d: d, hw: 12, oldest: 6}
	h.open()
	if r := h.recovered; r.AckFloor != 6 || r.Acked != 1 {
		t.Fatalf("recovered %+v", r)
	}
	if got := offsets(h.lease(10)); got != "6,7,8,10,11" {
		t.Fatalf("leases %s", got)
	}
}

func TestRecoveryChunkedReads(t *testing.T) {
	d := newDisk()
	var want []uint64
	var fs [][]uint64
	for i := uint64(0); i < 40; i++ {
		fs = append(fs, []uint64{0, 2*i + 1})
		want = append(want, 2*i+1)
	}
	writeFile(t, d, logPath, frames(fs...))
	h := &harness{t: t, cfg: lease.Config{Dir: testDir, RecoveryReadBytes: 17}, d: d, hw: 100}
	h.open()
	if r := h.recovered; r.Acked != len(want) || !hasDecision(r, "L6") {
		t.Fatalf("recovered %+v", r)
	}
}

// Row R1: a process that created acks.log died before its directory sync; the next
// recovery lists the file from the page cache and must sync the directory itself, or a
// later machine crash drops acks.log with every ack made durable in it since (cluster
// seed 69 of narad-sim redelivered an ack answered 290 ms before the crash).
func TestRecoveryR1SyncsEntriesAProcessCrashLeft(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ { // a crash keeps a random prefix of the journal
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{})
		cfg := lease.Config{Dir: testDir, VisibilityTimeoutNs: vis, AckFlushIntervalNs: 200}
		first := lease.New(cfg, rng.New(1))
		first.Open(0)
		for ops := first.Ready().Ops; len(ops) > 0; ops = first.Ready().Ops {
			if ops[0].Kind == disk.KindSyncDir {
				break // the process dies here; the kernel keeps the created entry, unsynced
			}
			for _, op := range ops {
				first.DiskDone(0, disk.Apply(d, op))
			}
		}
		h := newHarness(t, cfg, d) // the restart after the process crash
		h.setHW(3)
		h.mustAck(h.lease(1)[0])
		h.flush() // offset 0 durable: write and fdatasync of acks.log succeeded
		if s := h.m.Stats(); s.AcksDurable != s.Acks {
			t.Fatalf("seed %d: the ack is not durable: %+v", seed, s)
		}
		h.crash() // a machine crash
		if got := offsets(h.lease(5)); got != "1,2" {
			t.Fatalf("seed %d: after a machine crash leases %s: the durable ack of offset 0 was lost", seed, got)
		}
	}
}

// A misdirected write can land another partition's frame in this acks.log whole, with
// a valid CRC (node seed 44 of narad-sim: a foreign floor marked records acked that no
// client acked, and they were never delivered again). Frames are tagged with their
// partition, so the foreign one is damage (row L4), and this partition's own frames,
// tagged or written before tags, still count.
func TestRecoveryForeignFrameIsDamage(t *testing.T) {
	d := newDisk()
	b := lease.AppendAckFrameFor(nil, testDir, 0, []uint64{1})
	b = lease.AppendAckFrameFor(b, "acks/0000000000000099-0", 100, nil)
	b = lease.AppendAckFrame(b, 0, []uint64{2}) // format 1: before tags
	writeFile(t, d, logPath, b)
	h := recoverFrom(t, d, 6)
	if r := h.recovered; !hasDecision(r, "L4") || r.AckFloor != 0 || r.Acked != 2 {
		t.Fatalf("recovered %+v", r)
	}
	if got := offsets(h.lease(10)); got != "0,3,4,5" {
		t.Fatalf("leases %s", got)
	}
}
