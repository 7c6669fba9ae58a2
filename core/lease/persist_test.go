package lease_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

const logPath = testDir + "/" + lease.LogFile

// decodeAll decodes every frame of an ack-log image.
func decodeAll(t *testing.T, b []byte) (floors []uint64, acked []uint64) {
	t.Helper()
	for len(b) > 0 {
		f, offs, n, err := lease.DecodeAckFrameFor(b, testDir)
		if err != nil {
			t.Fatalf("decoding the log: %v", err)
		}
		floors = append(floors, f)
		acked = append(acked, offs...)
		b = b[n:]
	}
	return floors, acked
}

func TestAcksFlushInOneWriteAndSync(t *testing.T) {
	h := newReady(t, lease.Config{}, 10)
	rs := h.lease(10)
	h.mustAck(rs[3])
	h.now += 10
	h.mustAck(rs[5])
	if len(h.pending) != 0 {
		t.Fatalf("ack written before its flush time: %s", h.pendingKinds())
	}
	if at, ok := h.m.NextDeadline(); !ok || at != 200 {
		t.Fatalf("next deadline %d %v, want the flush at 200", at, ok)
	}
	h.advance(190) // now 200
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("flush: %s", h.pendingKinds())
	}
	w := h.complete(0, nil)
	if _, acked := decodeAll(t, w.Data); fmt.Sprint(acked) != "[3 5]" {
		t.Fatalf("frame holds %v", acked)
	}
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindSync {
		t.Fatalf("sync after write: %s", h.pendingKinds())
	}
	h.mustAck(rs[0]) // while the sync is in flight: waits for the next flush
	h.advance(500)
	if len(h.pending) != 1 || h.m.Stats().AcksDurable != 0 {
		t.Fatalf("two flushes in flight, or durable before the sync: %s", h.pendingKinds())
	}
	h.complete(0, nil) // the sync: its acks are durable; the next flush is due already
	if st := h.m.Stats(); st.AcksDurable != 2 || st.Flushes != 1 {
		t.Fatalf("after the first flush: %+v", st)
	}
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("due flush not started: %s", h.pendingKinds())
	}
	h.completeAll()
	floors, acked := decodeAll(t, h.d.DurableFiles()[logPath])
	if fmt.Sprint(floors) != "[0 1]" || fmt.Sprint(acked) != "[3 5]" {
		t.Fatalf("log: floors %v acked %v (the floor covers ack 0)", floors, acked)
	}
	if st := h.m.Stats(); st.AcksDurable != 3 || st.LogBytes != int64(len(h.d.DurableFiles()[logPath])) {
		t.Fatalf("after the second flush: %+v", st)
	}
	if _, ok := h.m.NextDeadline(); !ok {
		t.Fatalf("leases still have deadlines")
	}
}

func TestFullFrameFlushesEarlyInFrames(t *testing.T) {
	n := 2*lease.FrameOffsetsMax + 3000
	h := newReady(t, lease.Config{MaxInFlight: n + 1}, uint64(n+1))
	rs := h.lease(n + 1)
	for _, r := range rs[1 : lease.FrameOffsetsMax+1] { // the floor stays at 0
		h.mustAck(r)
	}
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("a full frame waits for the flush time: %s", h.pendingKinds())
	}
	for _, r := range rs[lease.FrameOffsetsMax+1:] {
		h.mustAck(r)
	}
	h.completeAll() // first write and sync, then the rest at once: over a full frame waits
	floors, acked := decodeAll(t, h.d.DurableFiles()[logPath])
	if len(floors) != 3 || len(acked) != n {
		t.Fatalf("%d frames holding %d acks, want 3 holding %d", len(floors), len(acked), n)
	}
	h.crash()
	if h.recovered.AckFloor != 0 || h.recovered.Acked != n {
		t.Fatalf("recovered %+v", h.recovered)
	}
}

func TestAckedSurviveCrashAfterFlush(t *testing.T) {
	h := newReady(t, lease.Config{}, 10)
	for _, r := range h.lease(10) {
		if r.Offset%2 == 0 {
			h.mustAck(r)
		}
	}
	h.flush()
	h.crash()
	if h.recovered.AckFloor != 1 || h.recovered.Acked != 4 {
		t.Fatalf("recovered %+v", h.recovered)
	}
	if got := offsets(h.lease(10)); got != "1,3,5,7,9" {
		t.Fatalf("after the crash: %s", got)
	}
}

func TestCrashBeforeFlushRedeliversNeverLoses(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{CrashKeepProb: 0.5, CrashTearProb: 0.3, CrashGarbageProb: 0.5})
		h := newHarness(t, lease.Config{VisibilityTimeoutNs: vis, AckFlushIntervalNs: 200}, d)
		h.setHW(10)
		rs := h.lease(10)
		for _, r := range rs[:4] {
			h.mustAck(r)
		}
		h.flush() // 0-3 durable
		for _, r := range rs[4:7] {
			h.mustAck(r)
		}
		h.advance(200)
		h.complete(0, nil) // 4-6 written, not synced: the crash may keep any part
		h.crash()
		if h.failed != nil {
			t.Fatalf("seed %d: %v", seed, h.failed)
		}
		got := offsets(h.lease(10))
		ok := false
		for _, want := range []string{"4,5,6,7,8,9", "7,8,9"} { // frames are all or nothing
			ok = ok || got == want
		}
		if !ok {
			t.Fatalf("seed %d: after the crash %s (decisions %v)", seed, got, h.recovered.Decisions)
		}
	}
}

func TestFailedSyncIsSticky(t *testing.T) {
	h := newReady(t, lease.Config{}, 10)
	rs := h.lease(10)
	h.mustAck(rs[0])
	h.flush()
	h.mustAck(rs[1])
	h.advance(200)
	h.complete(0, nil)        // write
	h.complete(0, disk.ErrIO) // fdatasync fails
	if !errors.Is(h.failed, lease.ErrFailed) || !errors.Is(h.m.Failed(), lease.ErrFailed) {
		t.Fatalf("failure not reported: %v", h.failed)
	}
	h.mustAck(rs[2]) // answers nil: settled in memory
	h.advance(1000)
	if len(h.pending) != 0 {
		t.Fatalf("written after the failure: %s", h.pendingKinds())
	}
	if st := h.m.Stats(); st.AcksDurable != 1 || st.Acks != 3 {
		t.Fatalf("stats %+v", st)
	}
	if got := offsets(h.lease(10)); got != "3,4,5,6,7,8,9" { // leases go on; the old ones expired
		t.Fatalf("this process must not redeliver what it acked: %s", got)
	}
	h.crash() // the restart: 0 stays acked; 1 and 2 may come back
	if h.failed != nil || !h.m.Acked(0) {
		t.Fatalf("after restart: %v, floor %d", h.failed, h.m.AckFloor())
	}
}

func TestFailedWriteIsSticky(t *testing.T) {
	h := newReady(t, lease.Config{}, 3)
	rs := h.lease(3)
	h.mustAck(rs[0])
	h.advance(200)
	h.complete(0, disk.ErrNoSpace)
	if !errors.Is(h.failed, lease.ErrFailed) || len(h.pending) != 0 {
		t.Fatalf("write failure: %v pending %s", h.failed, h.pendingKinds())
	}
	if _, ok := h.m.NextDeadline(); !ok {
		t.Fatalf("lease deadlines still count after the failure")
	}
	h.mustAck(rs[1])
	h.advance(1000)
	if len(h.pending) != 0 {
		t.Fatalf("flush after the failure")
	}
}

// compactionRun acks records in flushes until a compaction is under way, and returns the
// offsets whose acks are durable then and the harness with the compaction's first op
// pending.
func compactionRun(t *testing.T, d *sim.Disk) (*harness, map[uint64]bool) {
	t.Helper()
	h := newHarness(t, lease.Config{VisibilityTimeoutNs: 1 << 40, AckFlushIntervalNs: 200, LogBytesMax: 150}, d)
	h.setHW(1000)
	rs := h.lease(1000)
	var order []uint64
	for i := 0; h.m.Stats().Compactions == 0; i++ {
		if i >= 60 {
			t.Fatalf("no compaction after %d flushes", i)
		}
		for _, k := range []int{3 * i, 3*i + 2, 500 + i} { // the floor moves, and acks run ahead of it
			h.mustAck(rs[k])
			order = append(order, rs[k].Offset)
		}
		h.advance(200)
		for len(h.pending) > 0 && h.pending[0].Name != testDir+"/"+lease.SnapTmpFile {
			h.complete(0, nil)
		}
		if len(h.pending) > 0 {
			break // the compaction's first op: create acks.snap.tmp
		}
	}
	durable := map[uint64]bool{}
	for _, o := range order[:h.m.Stats().AcksDurable] {
		durable[o] = true
	}
	return h, durable
}

func TestCompactionCrashAtEveryStep(t *testing.T) {
	steps := []string{"create tmp", "write tmp", "sync tmp", "rename", "syncdir", "create log", "syncdir", "done"}
	for k := range steps {
		for seed := uint64(1); seed <= 12; seed++ {
			d := sim.NewDisk(rng.New(seed), sim.DiskConfig{CrashKeepProb: 0.4, CrashTearProb: 0.4, CrashGarbageProb: 0.5})
			h, durable := compactionRun(t, d)
			for i := 0; i < k && len(h.pending) > 0; i++ {
				h.complete(0, nil)
			}
			var ackedBefore []uint64
			for o := uint64(0); o < 1000; o++ {
				if h.m.Acked(o) {
					ackedBefore = append(ackedBefore, o)
				}
			}
			if k >= 5 {
				for _, o := range ackedBefore { // the snapshot is durable: every ack is
					durable[o] = true
				}
			}
			h.crash()
			if h.failed != nil {
				t.Fatalf("crash after %q, seed %d: %v", steps[k], seed, h.failed)
			}
			for o := range durable {
				if !h.m.Acked(o) {
					t.Fatalf("crash after %q, seed %d: durable ack %d lost (decisions %v)", steps[k], seed, o, h.recovered.Decisions)
				}
			}
			for o := uint64(0); o < 1000; o++ {
				if h.m.Acked(o) && !contains(ackedBefore, o) {
					t.Fatalf("crash after %q, seed %d: ack %d invented", steps[k], seed, o)
				}
			}
			if _, ok := h.d.DurableFiles()[testDir+"/"+lease.SnapTmpFile]; ok {
				t.Fatalf("crash after %q, seed %d: acks.snap.tmp left after recovery", steps[k], seed)
			}
			checkCleanAfterRecovery(t, h, fmt.Sprintf("crash after %q, seed %d", steps[k], seed))
		}
	}
}

// checkCleanAfterRecovery acks one more record, flushes, crashes with nothing pending
// and requires the exact same acked state back: recovery left a log new frames extend.
func checkCleanAfterRecovery(t *testing.T, h *harness, what string) {
	t.Helper()
	rs := h.lease(1)
	if len(rs) != 1 {
		t.Fatalf("%s: nothing to lease after recovery", what)
	}
	h.mustAck(rs[0])
	h.flush()
	floor, count := h.m.AckFloor(), h.m.Stats().AckedAboveFloor
	h.crash()
	if h.failed != nil || h.recovered.AckFloor != floor || h.recovered.Acked != count {
		t.Fatalf("%s: second recovery %+v %v, want floor %d acked %d", what, h.recovered, h.failed, floor, count)
	}
}

func contains(s []uint64, o uint64) bool {
	for _, x := range s {
		if x == o {
			return true
		}
	}
	return false
}

func TestCompactionReplacesLog(t *testing.T) {
	h, _ := compactionRun(t, nil)
	ops := ""
	for len(h.pending) > 0 {
		op := h.complete(0, nil)
		ops += op.Kind.String() + ";"
	}
	if ops != "create;write;sync;rename;syncdir;create;syncdir;" {
		t.Fatalf("compaction ops: %s", ops)
	}
	files := h.d.DurableFiles()
	floor, acked, err := lease.DecodeSnapshotFor(files[testDir+"/"+lease.SnapFile], testDir)
	if err != nil || floor != h.m.AckFloor() || len(acked) != h.m.Stats().AckedAboveFloor {
		t.Fatalf("snapshot floor %d acked %v err %v; manager %+v", floor, acked, err, h.m.Stats())
	}
	if len(files[logPath]) != 0 || h.m.Stats().LogBytes != 0 {
		t.Fatalf("log not replaced: %d bytes", len(files[logPath]))
	}
	if st := h.m.Stats(); st.AcksDurable != st.Acks || st.Compactions != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAcksDuringCompactionWaitForTheFreshLog(t *testing.T) {
	h, _ := compactionRun(t, nil)
	h.setHW(1001)
	next := h.lease(1)[0]
	for i := 0; len(h.pending) > 0; i++ {
		if i == 2 {
			h.mustAck(next)
			h.advance(1000) // the flush is due, but the compaction holds it
		}
		op := h.complete(0, nil)
		if op.Kind == disk.KindWriteAt && op.Name == logPath && i < 6 {
			t.Fatalf("flush into the log during compaction")
		}
	}
	h.crash()
	if !h.m.Acked(next.Offset) {
		t.Fatalf("ack given during compaction lost after its flush")
	}
}

// Acks in offset order keep the floor moving and the acked set above it empty, so the
// pending list is trimmed to nothing while a flush is due. The flush must still happen
// (it carries the floor), and the flush deadline must not stay in the past: a deadline
// that Tick does not clear makes the driver tick forever at the same instant.
func TestFlushDueWithEveryPendingAckUnderTheFloor(t *testing.T) {
	const n = 257 // the 257th ack trims the pending list (over 2*0+pendingSlack) to nothing
	h := newReady(t, lease.Config{}, n)
	rs := h.lease(n)
	for _, r := range rs { // in offset order: the floor follows
		h.mustAck(r)
	}
	h.advance(h.cfg.AckFlushIntervalNs + 1)
	if at, ok := h.m.NextDeadline(); ok && at <= h.now {
		t.Fatalf("after Tick the next deadline %d is not after now %d", at, h.now)
	}
	h.completeAll()
	if st := h.m.Stats(); st.AcksDurable != n {
		t.Fatalf("acks durable %d of %d", st.AcksDurable, n)
	}
	h.crash()
	if got := h.lease(n); len(got) != 0 {
		t.Fatalf("acked offsets delivered again after a crash: %s", offsets(got))
	}
}

// A clock stepped back while acks wait does not hold them for the step's size: the
// pending deadline moves back with the clock, so an ack answered after the step is
// written within the interval of its answer (cluster seed 983: a 562 ms step back left an
// ack unwritten 137 ms after its answer, and a crash lost it).
func TestClockStepBackKeepsTheFlushInterval(t *testing.T) {
	h := newReady(t, lease.Config{}, 10)
	h.now = 10_000
	rs := h.lease(3)
	h.mustAck(rs[0])       // the batch is due at 10_200
	h.now = 10_050 - 5_000 // 50 ns later, on a clock stepped back by 5_000
	h.mustAck(rs[1])
	if at, ok := h.m.NextDeadline(); !ok || at != 5_250 {
		t.Fatalf("next deadline %d %v, want the flush at 5_250 (200 after the last reading before the step)", at, ok)
	}
	h.advance(200) // now 5_250: 200 after the second ack's answer
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("flush not started 200 ns after the ack: %s", h.pendingKinds())
	}
	h.completeAll()
	if floors, acked := decodeAll(t, h.d.DurableFiles()[logPath]); fmt.Sprint(floors) != "[2]" || len(acked) != 0 {
		t.Fatalf("log holds floors %v and acks %v, want the floor 2 (acks 0 and 1)", floors, acked)
	}
	if st := h.m.Stats(); st.AcksDurable != 2 {
		t.Fatalf("after the flush: %+v", st)
	}
	h.mustAck(rs[2]) // a step forward only brings a flush forward
	h.advance(10_000)
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("flush after a step forward: %s", h.pendingKinds())
	}
}
