package wal_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/frame"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/sim"
)

func TestGroupCommitSharesOneWriteAndSync(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	a := h.append("t", []byte("a"))
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("first append should flush at once, pending: %s", h.pendingKinds())
	}
	b := h.append("t", []byte("b"))
	c := h.append("t", []byte("c"))
	if len(h.pending) != 1 {
		t.Fatalf("appends during a flush must stage, pending: %s", h.pendingKinds())
	}
	h.complete(0, nil) // write a
	if _, ok := h.done[a]; ok {
		t.Fatalf("append answered before its sync")
	}
	if h.pending[0].Kind != disk.KindSync {
		t.Fatalf("want sync after write, pending: %s", h.pendingKinds())
	}
	h.complete(0, nil) // sync a
	if _, ok := h.done[a]; ok || h.pending[0].Kind != disk.KindReadAt {
		t.Fatalf("after the sync the group is read back before any answer, pending: %s", h.pendingKinds())
	}
	h.complete(0, nil) // read back a
	if d := h.done[a]; d.Err != nil || d.Seq != 1 {
		t.Fatalf("a: %+v", d)
	}
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("staged group should go out, pending: %s", h.pendingKinds())
	}
	w := h.complete(0, nil)
	h.complete(0, nil) // sync
	h.complete(0, nil) // read back
	if h.done[b].Seq != 2 || h.done[c].Seq != 3 || h.done[b].Err != nil || h.done[c].Err != nil {
		t.Fatalf("b, c: %+v %+v", h.done[b], h.done[c])
	}
	r1, n, _ := wal.DecodeFrame(w.Data)
	r2, _, _ := wal.DecodeFrame(w.Data[n:])
	if string(r1.Payload) != "b" || string(r2.Payload) != "c" {
		t.Fatalf("one write should hold b and c")
	}
}

func TestFailedSyncIsStickyAndNeverAcked(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	a := h.append("t", []byte("a"))
	h.complete(0, nil)
	b := h.append("t", []byte("b")) // staged behind a's sync
	h.complete(0, disk.ErrIO)       // a's fdatasync fails
	for _, tok := range []uint64{a, b} {
		if d, ok := h.done[tok]; !ok || !errors.Is(d.Err, wal.ErrFailed) {
			t.Fatalf("token %d: %+v, want ErrFailed", tok, d)
		}
	}
	if !errors.Is(h.failed, wal.ErrFailed) || !errors.Is(h.l.Failed(), wal.ErrFailed) {
		t.Fatalf("failure not reported: %v", h.failed)
	}
	c := h.append("t", []byte("c"))
	if !errors.Is(h.done[c].Err, wal.ErrFailed) || len(h.pending) != 0 {
		t.Fatalf("append after failure: %+v pending %s", h.done[c], h.pendingKinds())
	}
}

func TestFailedWriteIsSticky(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	a := h.append("t", []byte("a"))
	h.complete(0, disk.ErrIO)
	if !errors.Is(h.done[a].Err, wal.ErrFailed) || len(h.pending) != 0 {
		t.Fatalf("write failure: %+v pending %s", h.done[a], h.pendingKinds())
	}
}

// A group write that finds no space is cut back (and the cut synced); its appends and
// those staged behind it are refused with ErrNoSpace and their seqs given again; appends
// are refused for NoSpaceRetryNs, then accepted again (issue 13, point 5).
func TestNoSpaceRefusesTheGroupAndGivesItsSeqsBack(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	a := h.append("t", []byte("a"))
	b := h.append("t", []byte("b")) // staged behind a's write
	h.complete(0, disk.ErrNoSpace)
	if h.pendingKinds() != "truncate wal/0000000000000001.seg;" {
		t.Fatalf("after no space: pending %s", h.pendingKinds())
	}
	h.complete(0, nil)
	if _, answered := h.done[a]; answered || h.pendingKinds() != "sync wal/0000000000000001.seg;" {
		t.Fatalf("the cut must be synced before any answer: %+v pending %s", h.done[a], h.pendingKinds())
	}
	h.complete(0, nil)
	for _, tok := range []uint64{a, b} {
		if !errors.Is(h.done[tok].Err, wal.ErrNoSpace) {
			t.Fatalf("token %d: %+v, want ErrNoSpace", tok, h.done[tok])
		}
	}
	c := h.append("t", []byte("c"))
	if !errors.Is(h.done[c].Err, wal.ErrNoSpace) || !h.l.Stats().NoSpaceNow || len(h.pending) != 0 {
		t.Fatalf("an append while the device is full: %+v pending %s", h.done[c], h.pendingKinds())
	}
	h.now += wal.NoSpaceRetryNs
	d := h.append("t", []byte("d"))
	h.completeAll()
	if r := h.done[d]; r.Err != nil || r.Seq != 1 || h.l.Stats().NoSpaceNow || h.l.Stats().NoSpaceWrites != 1 {
		t.Fatalf("d: %+v (want seq 1, given again), stats %+v", r, h.l.Stats())
	}
	h.crash() // only d is on the disk
	if h.recovered == nil || len(h.recovered.Records) != 1 || string(h.recovered.Records[0].Payload) != "d" {
		t.Fatalf("recovered %+v", h.recovered)
	}
}

func TestAppendRefusals(t *testing.T) {
	h := newHarness(t, wal.Config{StagedBytesMax: 200}, nil)
	bad := h.append("t", nil)
	if !errors.Is(h.done[bad].Err, wal.ErrPayloadSize) {
		t.Fatalf("empty payload: %+v", h.done[bad])
	}
	h.append("t", []byte("x")) // in flight
	ok := h.append("t", bytes.Repeat([]byte("y"), 100))
	full := h.append("t", bytes.Repeat([]byte("z"), 100))
	if _, answered := h.done[ok]; answered {
		t.Fatalf("staged append answered early")
	}
	if !errors.Is(h.done[full].Err, wal.ErrFull) {
		t.Fatalf("over StagedBytesMax: %+v", h.done[full])
	}
	l := wal.New(wal.Config{})
	l.Append(0, 1, wal.Record{Topic: "t", Payload: []byte("x")})
	if d := l.Ready().Done; len(d) != 1 || !errors.Is(d[0].Err, wal.ErrNotReady) {
		t.Fatalf("append before recovery: %+v", d)
	}
}

func TestAckedRecordsSurviveCrash(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	var want []string
	for i := 0; i < 20; i++ {
		p := string(rune('a' + i))
		h.append("t", []byte(p))
		want = append(want, p)
		h.completeAll()
	}
	h.append("t", []byte("unacked")) // written, never synced
	h.complete(0, nil)
	h.crash()
	var got []string
	for _, r := range h.recovered.Records {
		got = append(got, string(r.Payload))
	}
	if len(got) < len(want) {
		t.Fatalf("lost acked records: got %v", got)
	}
	for i := range want {
		if got[i] != want[i] || h.recovered.Records[i].Seq != uint64(i+1) {
			t.Fatalf("record %d: %q seq %d", i, got[i], h.recovered.Records[i].Seq)
		}
	}
	next := h.append("t", []byte("after"))
	h.completeAll()
	if d := h.done[next]; d.Err != nil || d.Seq != h.recovered.NextSeq {
		t.Fatalf("append after recovery: %+v, next seq %d", d, h.recovered.NextSeq)
	}
}

func TestCheckpointIsLazyAndCompacts(t *testing.T) {
	h := newHarness(t, wal.Config{SegmentRotateBytes: 256, CheckpointSyncIntervalNs: 250e6}, nil)
	for i := 0; i < 30; i++ {
		h.append("t", bytes.Repeat([]byte{'p'}, 40))
		h.completeAll()
	}
	h.l.SetCheckpoint(h.now, 20)
	h.pump()
	if len(h.pending) != 0 {
		t.Fatalf("checkpoint written before its deadline: %s", h.pendingKinds())
	}
	if at, ok := h.l.NextDeadline(); !ok || at != h.now+250e6 {
		t.Fatalf("checkpoint deadline %d %v", at, ok)
	}
	h.l.SetCheckpoint(h.now+1, 31) // everything dispatched: the active segment rotates
	h.pump()
	h.completeAll()
	h.advance()
	if h.l.DurableCheckpoint() != 31 {
		t.Fatalf("durable checkpoint %d", h.l.DurableCheckpoint())
	}
	names, _ := h.d.List("wal")
	if len(names) != 2 || names[0] != "000000000000001f.seg" || names[1] != "checkpoint" {
		t.Fatalf("after compaction: %v", names)
	}
	h.crash()
	if h.recovered.Checkpoint != 31 || len(h.recovered.Records) != 0 || h.recovered.NextSeq != 31 {
		t.Fatalf("recovered %+v", h.recovered)
	}
}

func TestCheckpointBackwardsPanics(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	h.append("t", []byte("a"))
	h.completeAll()
	h.l.SetCheckpoint(0, 2)
	defer func() {
		if recover() == nil {
			t.Fatalf("moving the checkpoint backwards must panic")
		}
	}()
	h.l.SetCheckpoint(0, 1)
}

func TestSilentWriteCorruptionIsCaughtByReadBack(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{WriteCorruptProb: 1})
	d.SetFaults(false)
	h := newHarness(t, wal.Config{}, d)
	d.SetFaults(true)
	a := h.append("t", []byte("payload"))
	h.completeAll()
	if !errors.Is(h.done[a].Err, wal.ErrFailed) || h.failed == nil {
		t.Fatalf("a corrupted group must not be acknowledged: %+v", h.done[a])
	}
	d.SetFaults(false)
	h.crash()
	for _, r := range h.recovered.Records {
		if string(r.Payload) != "payload" {
			t.Fatalf("recovery served a corrupted record: %q", r.Payload)
		}
	}
}

// A batch arriving at an idle WAL is one group: one write holding every record, one
// fdatasync, and every record answered after it.
func TestAppendBatchIsOneGroup(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	var toks []uint64
	var recs []wal.Record
	for _, p := range []string{"a", "b", "c"} {
		h.token++
		toks = append(toks, h.token)
		recs = append(recs, wal.Record{Topic: "t", Partition: 1, Incarnation: 9, Payload: []byte(p)})
	}
	h.l.AppendBatch(h.now, toks, recs)
	h.pump()
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindWriteAt {
		t.Fatalf("want one write, pending: %s", h.pendingKinds())
	}
	w := h.complete(0, nil)
	p := 0
	for n := range recs {
		r, size, err := wal.DecodeFrame(w.Data[p:])
		if err != nil || string(r.Payload) != string(recs[n].Payload) {
			t.Fatalf("record %d of the write: %q %v", n, r.Payload, err)
		}
		p += size
	}
	if zeros := w.Data[p:]; len(zeros) != wal.DefaultPreallocBytes || !frame.IsZero(zeros) {
		t.Fatalf("the first write carries %d bytes after its frames, want %d zeros",
			len(zeros), wal.DefaultPreallocBytes)
	}
	h.complete(0, nil) // sync
	h.complete(0, nil) // read back
	for i, tok := range toks {
		if d, ok := h.done[tok]; !ok || d.Err != nil || d.Seq != uint64(i+1) {
			t.Fatalf("record %d: %+v %v", i, d, ok)
		}
	}
	if len(h.pending) != 0 {
		t.Fatalf("a second group went out: %s", h.pendingKinds())
	}
}

// A group whose write the device stored otherwise, while the page cache holds it intact,
// is never answered durable: the read-back reads the device (Op.Device), not the cache.
func TestReadBackReadsTheDevice(t *testing.T) {
	d := sim.NewDisk(rng.New(3), sim.DiskConfig{})
	// No zeros after the frames: the corruption must land in them.
	h := newHarness(t, wal.Config{PreallocBytes: -1}, d)
	d.SetConfig(sim.DiskConfig{WriteCorruptProb: 1}) // from here every write is silently corrupted on the device
	a := h.append("t", []byte("payload"))
	h.complete(0, nil) // write
	h.complete(0, nil) // sync
	if len(h.pending) != 1 || h.pending[0].Kind != disk.KindReadAt || !h.pending[0].Device {
		t.Fatalf("the read-back must read the device, pending: %+v", h.pending)
	}
	h.completeAll()
	if got, ok := h.done[a]; ok && got.Err == nil {
		t.Fatalf("a write corrupted on the device was answered durable")
	}
	if h.failed == nil {
		t.Fatalf("the log did not fail on a corrupted group")
	}
}

// A checkpoint write that finds no space is tried again after NoSpaceRetryNs instead of
// failing the log; the checkpoint is durable once it fits (issue 13, point 5).
func TestCheckpointNoSpaceIsTriedAgain(t *testing.T) {
	h := newHarness(t, wal.Config{}, nil)
	h.append("t", []byte("a"))
	h.append("t", []byte("b"))
	h.completeAll()
	h.l.SetCheckpoint(h.now, 2)
	at, _ := h.l.NextDeadline() // the checkpoint flush: its write goes out
	h.now = at
	h.l.Tick(h.now)
	h.pump()
	for i, op := range h.pending {
		if op.Kind == disk.KindWriteAt && strings.HasSuffix(op.Name, "checkpoint") {
			h.complete(i, disk.ErrNoSpace)
			break
		}
	}
	h.completeAll()
	if h.failed != nil || h.l.Stats().NoSpaceWrites != 1 {
		t.Fatalf("failed %v, stats %+v", h.failed, h.l.Stats())
	}
	h.advance() // tried again
	h.crash()
	if h.recovered == nil || h.recovered.Checkpoint != 2 {
		t.Fatalf("recovered %+v", h.recovered)
	}
}
