package wal_test

import (
	"bytes"
	"testing"

	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/sim"
)

// checkpointFixture fills several small segments with 30 acknowledged records and makes
// checkpoint 10 durable, so that records 10..30 are the WAL's to keep.
func checkpointFixture(t *testing.T, d *sim.Disk) *harness {
	t.Helper()
	h := newHarness(t, wal.Config{SegmentRotateBytes: 256, CheckpointSyncIntervalNs: 1e6}, d)
	for i := 0; i < 30; i++ {
		h.append("t", bytes.Repeat([]byte{'p'}, 40))
		h.completeAll()
	}
	h.l.SetCheckpoint(h.now, 10)
	h.pump()
	h.completeAll()
	h.advance()
	if h.l.DurableCheckpoint() != 10 {
		t.Fatalf("durable checkpoint %d, want 10", h.l.DurableCheckpoint())
	}
	return h
}

// dueCheckpointWrite moves the checkpoint to 31 and leaves its slot write pending.
func dueCheckpointWrite(t *testing.T, h *harness) {
	t.Helper()
	h.l.SetCheckpoint(h.now, 31)
	h.pump()
	h.completeAll() // the rotation the move allows
	at, ok := h.l.NextDeadline()
	if !ok {
		t.Fatal("no checkpoint deadline")
	}
	h.now = at
	h.l.Tick(h.now)
	h.pump()
	if len(h.pending) != 1 || h.pending[0].Name != "wal/checkpoint" {
		t.Fatalf("want the checkpoint slot write pending, have %s", h.pendingKinds())
	}
}

// requireAckedAboveCheckpoint crashes the machine, recovers, and requires every record at
// or above the recovered checkpoint (of the 30 acknowledged) to be recovered.
func requireAckedAboveCheckpoint(t *testing.T, h *harness) {
	t.Helper()
	h.d.SetFaults(false)
	h.crash()
	got := map[uint64]bool{}
	for _, r := range h.recovered.Records {
		got[r.Seq] = true
	}
	for seq := h.recovered.Checkpoint; seq <= 30; seq++ {
		if !got[seq] {
			t.Fatalf("acked seq %d lost: recovered checkpoint %d, records %d, decisions %v",
				seq, h.recovered.Checkpoint, len(h.recovered.Records), h.recovered.Decisions)
		}
	}
}

// A checkpoint slot write that reports success but lands elsewhere on the device must not
// count as durable: compaction would remove the segments the device's older checkpoint
// still points into (walsim seed 210).
func TestMisdirectedCheckpointWriteIsNotTrusted(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{MisdirectProb: 1})
	d.SetFaults(false)
	h := checkpointFixture(t, d)
	dueCheckpointWrite(t, h)
	d.SetFaults(true)
	h.complete(0, nil) // the slot write: misdirected
	d.SetFaults(false)
	h.completeAll()
	if h.l.DurableCheckpoint() != 10 {
		t.Fatalf("a misdirected slot write counted as durable: checkpoint %d", h.l.DurableCheckpoint())
	}
	requireAckedAboveCheckpoint(t, h)
}

// After a process crash the dead process's slot write may still be dirty in the page
// cache, where a device read sees it; recovery must make it durable before compacting on
// it, or a machine crash brings back the old checkpoint with its records gone (walsim
// seed 211).
func TestRecoveryDoesNotCompactOnADirtyCheckpoint(t *testing.T) {
	h := checkpointFixture(t, nil)
	dueCheckpointWrite(t, h)
	h.complete(0, nil) // the slot write reaches the page cache; its sync never runs
	h.pending = nil
	h.d.ProcessCrash()
	h.open()
	if h.recovered.Checkpoint != 31 {
		t.Fatalf("recovered checkpoint %d, want the cached slot's 31", h.recovered.Checkpoint)
	}
	requireAckedAboveCheckpoint(t, h)
}
