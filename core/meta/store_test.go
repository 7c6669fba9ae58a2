package meta_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// indexOf returns the index of the first pending op of kind on name, or -1.
func (h *harness) indexOf(kind disk.Kind, name string) int {
	for i, op := range h.pending {
		if op.Kind == kind && op.Name == name {
			return i
		}
	}
	return -1
}

// A proposal is answered only after the fdatasync covering its entry completed: every
// sync of raft.log is held while time passes, and nothing is answered before it.
func TestAnsweredOnlyAfterSync(t *testing.T) {
	h := settled(t, meta.Config{})
	tok := h.propose(create("orders"))
	syncs := 0
	for n := 0; ; n++ {
		if _, ok := h.done[tok]; ok {
			break
		}
		if n > 100 || len(h.pending) == 0 {
			t.Fatalf("no answer; pending %s", h.pendingKinds())
		}
		if i := h.indexOf(disk.KindSync, "meta/raft.log"); i >= 0 {
			for range 5 {
				h.tick()
			}
			if _, ok := h.done[tok]; ok {
				t.Fatal("answered while the sync is held")
			}
			if f := h.d.DurableFiles()["meta/raft.log"]; syncs == 0 && bytes.Contains(f, []byte("orders")) {
				t.Fatal("entry durable before its sync completed?")
			}
			h.complete(i, nil)
			syncs++
			continue
		}
		h.complete(0, nil)
	}
	if syncs < 2 {
		t.Fatalf("answered after %d syncs: the entry and the commit index are each synced", syncs)
	}
	if !bytes.Contains(h.d.DurableFiles()["meta/raft.log"], []byte(`"orders"`)) {
		t.Fatal("answered, but the entry is not in the durable raft.log")
	}
	if h.done[tok].Err != nil {
		t.Fatal(h.done[tok].Err)
	}
}

// Each Ready is one write followed, only after it completed, by one fdatasync.
func TestOneWriteOneSyncPerReady(t *testing.T) {
	h := settled(t, meta.Config{})
	h.propose(create("a"))
	for len(h.pending) > 0 {
		if len(h.pending) != 1 {
			t.Fatalf("more than one op in flight: %s", h.pendingKinds())
		}
		op := h.complete(0, nil)
		if op.Kind == disk.KindWriteAt && (len(h.pending) != 1 || h.pending[0].Kind != disk.KindSync) {
			t.Fatalf("a write is followed by its sync, got %s", h.pendingKinds())
		}
	}
}

func TestFailedSyncIsSticky(t *testing.T) {
	for _, kind := range []disk.Kind{disk.KindSync, disk.KindWriteAt} {
		h := settled(t, meta.Config{})
		h.run(create("kept"))
		a := h.propose(create("a"))
		b := h.propose(create("b"))
		br := h.barrier()
		for h.indexOf(kind, "meta/raft.log") < 0 {
			h.complete(0, nil)
		}
		err := disk.ErrIO
		if kind == disk.KindWriteAt {
			err = disk.ErrNoSpace
		}
		h.complete(h.indexOf(kind, "meta/raft.log"), err)
		if !errors.Is(h.failed, meta.ErrFailed) || !errors.Is(h.s.Failed(), meta.ErrFailed) {
			t.Fatalf("%s failure: store not failed: %v", kind, h.failed)
		}
		for _, tok := range []uint64{a, b} {
			if d, ok := h.done[tok]; !ok || !errors.Is(d.Err, meta.ErrFailed) {
				t.Fatalf("%s failure: pending proposal answered %+v %v", kind, d, ok)
			}
		}
		if d, ok := h.barriers[br]; !ok || !errors.Is(d.Err, meta.ErrFailed) {
			t.Fatalf("%s failure: pending barrier answered %+v %v", kind, d, ok)
		}
		if d := h.done[h.propose(create("c"))]; !errors.Is(d.Err, meta.ErrFailed) {
			t.Fatalf("later proposal: %v", d.Err)
		}
		if d := h.barriers[h.barrier()]; !errors.Is(d.Err, meta.ErrFailed) {
			t.Fatalf("later barrier: %v", d.Err)
		}
		if _, ok := h.s.NextDeadline(); ok || h.s.Leader() || h.s.CaughtUp() {
			t.Fatal("a failed store asks for ticks or claims leadership")
		}
		h.completeAll() // completions after the failure change nothing
		h.tick()
		if len(h.pending) != 0 {
			t.Fatalf("a failed store issued %s", h.pendingKinds())
		}
		h.restart() // the page cache survives: what the failed sync covered may reappear
		if got, ok := h.s.Topic("kept"); !ok || got.Name != "kept" {
			t.Fatalf("%s failure: answered topic lost after restart", kind)
		}
		h.crash()
		if _, ok := h.s.Topic("kept"); !ok {
			t.Fatalf("%s failure: answered topic lost after crash", kind)
		}
	}
}

func TestBusy(t *testing.T) {
	h := settled(t, meta.Config{})
	h.run(create("t"))
	var toks []uint64
	for i := 0; i < meta.ProposalsMax; i++ {
		toks = append(toks, h.propose(meta.Command{Kind: meta.PatchTopic, Name: "t", RetentionMs: new(int64(i))}))
	}
	over := h.propose(create("u"))
	if d := h.done[over]; !errors.Is(d.Err, meta.ErrBusy) {
		t.Fatalf("proposal past ProposalsMax: %+v", d)
	}
	var btoks []uint64
	for i := 0; i < meta.BarriersMax; i++ {
		btoks = append(btoks, h.barrier())
	}
	if d := h.barriers[h.barrier()]; !errors.Is(d.Err, meta.ErrBusy) {
		t.Fatalf("barrier past BarriersMax: %+v", d)
	}
	h.settle()
	for _, tok := range toks {
		if d, ok := h.done[tok]; !ok || d.Err != nil {
			t.Fatalf("queued proposal: %+v %v", d, ok)
		}
	}
	for _, tok := range btoks {
		if d, ok := h.barriers[tok]; !ok || d.Err != nil {
			t.Fatalf("queued barrier: %+v %v", d, ok)
		}
	}
}

func TestNotLeaderUntilRecoveredAndElected(t *testing.T) {
	s := meta.New(meta.Config{})
	var got []error
	s.Propose(0, 1, create("x"))
	s.Barrier(0, 2)
	rd := s.Ready()
	for _, d := range rd.Done {
		got = append(got, d.Err)
	}
	for _, d := range rd.Barriers {
		got = append(got, d.Err)
	}
	if len(got) != 2 || !errors.Is(got[0], meta.ErrNotLeader) || !errors.Is(got[1], meta.ErrNotLeader) {
		t.Fatalf("before Open: %v", got)
	}
	h := newHarness(t, meta.Config{}, nil) // recovered, the bootstrap entry not yet durable
	if h.s.Leader() {
		t.Fatal("leader before the bootstrap entry is durable")
	}
	if d := h.done[h.propose(create("x"))]; !errors.Is(d.Err, meta.ErrNotLeader) {
		t.Fatalf("before the election: %v", d.Err)
	}
	if d := h.barriers[h.barrier()]; !errors.Is(d.Err, meta.ErrNotLeader) {
		t.Fatalf("barrier before the election: %v", d.Err)
	}
	h.settle()
	if !h.s.Leader() || !h.s.CaughtUp() {
		t.Fatal("not leader after settling")
	}
}

// A barrier is answered once the replica applied the index the leader confirmed, which
// covers every entry committed before the barrier was asked.
func TestBarrier(t *testing.T) {
	h := settled(t, meta.Config{})
	if d, ok := h.barriers[h.barrier()]; !ok || d.Err != nil {
		t.Fatalf("idle barrier on the self leader is answered without the disk: %+v %v", d, ok)
	}
	p := h.propose(create("x"))
	// Drive the proposal up to the point where it is committed but not applied: the sync of
	// the frame carrying the commit index is in flight.
	for syncs := 0; syncs < 2; {
		if h.pending[0].Kind == disk.KindSync {
			syncs++
			if syncs == 2 {
				break
			}
		}
		h.complete(0, nil)
	}
	b := h.barrier()
	if _, ok := h.barriers[b]; ok {
		t.Fatal("barrier answered before the committed entry is applied")
	}
	h.completeAll()
	d, ok := h.barriers[b]
	if !ok || d.Err != nil || h.done[p].Err != nil {
		t.Fatalf("barrier %+v %v, proposal %+v", d, ok, h.done[p])
	}
	if _, ok := h.s.Topic("x"); !ok {
		t.Fatal("a read after the barrier does not see the committed create")
	}
}

// Requests that wait RequestTimeoutTicks (here: behind a hung fdatasync) are answered
// ErrTimeout; the store stays consistent and the entry still applies when the disk returns.
func TestTimeouts(t *testing.T) {
	h := settled(t, meta.Config{})
	p := h.propose(create("slow"))
	for h.indexOf(disk.KindSync, "meta/raft.log") < 0 {
		h.complete(0, nil)
	}
	b := h.barrier()
	for range meta.RequestTimeoutTicks {
		h.tick()
	}
	if d := h.done[p]; !errors.Is(d.Err, meta.ErrTimeout) {
		t.Fatalf("proposal: %+v", d)
	}
	if d := h.barriers[b]; !errors.Is(d.Err, meta.ErrTimeout) {
		t.Fatalf("barrier: %+v", d)
	}
	h.settle()
	if _, ok := h.s.Topic("slow"); !ok {
		t.Fatal("the timed-out create did not apply once the disk returned")
	}
}

// Ticks keep a sole voter leader and cost no disk op; NextDeadline follows the interval.
func TestTicksIdle(t *testing.T) {
	h := settled(t, meta.Config{TickIntervalNs: 1000})
	term := h.recovered.Term
	at, ok := h.s.NextDeadline()
	if !ok || at <= h.now-1000 || at > h.now+1000 {
		t.Fatalf("next deadline %d at %d", at, h.now)
	}
	for range 1000 {
		h.tick()
		if len(h.pending) != 0 {
			t.Fatalf("idle tick issued %s", h.pendingKinds())
		}
	}
	if !h.s.Leader() {
		t.Fatal("lost leadership while idle")
	}
	h.now += 1e12 // a long pause: bounded catch-up, still leader
	h.s.Tick(h.now)
	h.pump()
	h.settle()
	if !h.s.Leader() || h.recovered.Term != term {
		t.Fatal("lost leadership after a long pause")
	}
}

// Proposal seqs restart with the process. An entry written by an earlier process (durable,
// not yet applied when it crashed) that applies after a new proposal with the same seq was
// made must not answer it: an entry answers a proposal only under the proposer's term.
func TestOldEntryDoesNotAnswerNewProposal(t *testing.T) {
	h := settled(t, meta.Config{})
	h.propose(create("old"))
	for h.indexOf(disk.KindSync, "meta/raft.log") < 0 {
		h.complete(0, nil)
	}
	h.complete(h.indexOf(disk.KindSync, "meta/raft.log"), nil) // the entry is durable
	h.d.Crash()
	h.open()
	for n := 0; !h.s.Leader(); n++ {
		if n > 100 {
			t.Fatal("no leadership")
		}
		if len(h.pending) > 0 {
			h.complete(0, nil)
		} else {
			h.tick()
		}
	}
	if _, ok := h.s.Topic("old"); ok {
		t.Fatal("the old entry applied before leadership: the test needs it after")
	}
	tok := h.propose(create("new"))
	h.settle()
	if d := h.done[tok]; d.Err != nil || d.Topic.Name != "new" {
		t.Fatalf("new proposal answered %+v", d)
	}
	if names(h.s.Topics()) != "new,old" {
		t.Fatalf("topics %s", names(h.s.Topics()))
	}
}

// A write the disk silently damages is read back after its fdatasync and never trusted:
// the proposal it carried is not answered as applied, the store fails, and a restart on a
// healthy disk recovers (the damaged frame is the log's tail, dropped as torn).
func TestSilentWriteCorruptionIsNeverTrusted(t *testing.T) {
	d := sim.NewDisk(rng.New(3), sim.DiskConfig{WriteCorruptProb: 1})
	d.SetFaults(false)
	h := newHarness(t, meta.Config{}, d)
	h.settle()
	h.run(create("kept"))
	d.SetFaults(true)
	a := h.propose(create("a"))
	h.completeAll()
	if !errors.Is(h.failed, meta.ErrFailed) {
		t.Fatalf("store did not fail on a damaged write: %v", h.failed)
	}
	if r, ok := h.done[a]; ok && r.Err == nil {
		t.Fatal("a proposal whose frame was damaged on disk was answered as applied")
	}
	d.SetFaults(false)
	h.crash()
	if h.failed != nil {
		t.Fatalf("recovery after the damaged write failed: %v", h.failed)
	}
	if _, ok := h.s.Topic("kept"); !ok {
		t.Fatal("answered topic lost")
	}
	if r := h.run(create("b")); r.Err != nil {
		t.Fatalf("store unusable after recovery: %v", r.Err)
	}
}
