package meta_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// One test per row of the recovery decision table in doc.go.

func hasDecision(r *meta.Recovery, row string) bool {
	if r == nil {
		return false
	}
	for _, d := range r.Decisions {
		if strings.HasPrefix(d, row+" ") {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// putFile lays down a durable file.
func putFile(t *testing.T, d *sim.Disk, name string, b []byte) {
	t.Helper()
	must(t, d.Create(name))
	if len(b) > 0 {
		must(t, d.WriteAt(name, 0, b))
	}
	must(t, d.Sync(name))
	must(t, d.SyncDir("meta"))
}

// damage flips one byte of a durable file at off (from the end when off < 0).
func damage(t *testing.T, d *sim.Disk, name string, off int64) {
	t.Helper()
	b := d.DurableFiles()[name]
	if off < 0 {
		off += int64(len(b))
	}
	must(t, d.WriteAt(name, off, []byte{b[off] ^ 0x40}))
	must(t, d.Sync(name))
}

func TestRecoveryS1L1BWEmptyDirectory(t *testing.T) {
	h := newHarness(t, meta.Config{}, nil)
	for _, row := range []string{"S1", "L1", "B", "W"} {
		if !hasDecision(h.recovered, row) {
			t.Fatalf("row %s missing: %v", row, h.recovered.Decisions)
		}
	}
	if _, ok := h.d.DurableFiles()["meta/raft.log"]; !ok {
		t.Fatal("the rewrite left no durable raft.log")
	}
	h.settle()
	h.run(create("a"))
	h.crash()
	if !hasDecision(h.recovered, "L2") || hasDecision(h.recovered, "B") || h.recovered.Topics != 1 {
		t.Fatalf("second start: %+v", h.recovered)
	}
}

// snapshotted returns a settled harness whose store took at least one snapshot.
func snapshotted(t *testing.T, d *sim.Disk) (*harness, []string) {
	h := newHarness(t, meta.Config{SnapshotEveryEntries: 3}, d)
	h.settle()
	var created []string
	for i := 0; meta.SnapshotIndex(h.s) == 0; i++ {
		name := fmt.Sprintf("t%02d", i)
		if d := h.run(create(name)); d.Err != nil {
			t.Fatal(d.Err)
		}
		created = append(created, name)
	}
	return h, created
}

func TestRecoveryS2SnapshotThenLog(t *testing.T) {
	h, created := snapshotted(t, nil)
	h.run(create("after"))
	h.crash()
	if !hasDecision(h.recovered, "S2") || h.recovered.SnapshotIndex == 0 {
		t.Fatalf("decisions %v", h.recovered.Decisions)
	}
	if got, want := names(h.s.Topics()), "after,"+strings.Join(created, ","); got != want {
		t.Fatalf("topics %s, want %s", got, want)
	}
	if got := meta.AppliedCommands(h.s); got != uint64(len(created)+1) {
		t.Fatalf("applied commands %d, want %d", got, len(created)+1)
	}
}

func TestRecoveryS3CorruptSnapshotFails(t *testing.T) {
	h, _ := snapshotted(t, nil)
	damage(t, h.d, "meta/snap", 20)
	h.open()
	if !errors.Is(h.failed, meta.ErrCorrupt) || !errors.Is(h.failed, meta.ErrFailed) || h.recovered != nil {
		t.Fatalf("want a corrupt-snapshot failure, got %v", h.failed)
	}
}

func TestRecoveryL3TornTailDropped(t *testing.T) {
	h := settled(t, meta.Config{})
	h.run(create("a"))
	h.run(create("b"))
	log := h.d.DurableFiles()["meta/raft.log"]
	frame := meta.AppendLogFrame(nil, 9, 1, 9, []*raftpb.Entry{{Index: new(uint64(50)), Term: new(uint64(9))}})
	must(t, h.d.WriteAt("meta/raft.log", int64(len(log)), append(frame[:len(frame)-3], 0xde, 0xad)))
	must(t, h.d.Sync("meta/raft.log"))
	h.restart()
	if !hasDecision(h.recovered, "L3") || names(h.s.Topics()) != "a,b" {
		t.Fatalf("decisions %v topics %s", h.recovered.Decisions, names(h.s.Topics()))
	}
	h.crash() // the rewrite left a clean log: no torn tail any more
	if hasDecision(h.recovered, "L3") || names(h.s.Topics()) != "a,b" {
		t.Fatalf("after the rewrite: decisions %v", h.recovered.Decisions)
	}
}

func TestRecoveryL4DamageBeforeValidFramesFails(t *testing.T) {
	h := settled(t, meta.Config{})
	h.run(create("a"))
	h.run(create("b"))
	damage(t, h.d, "meta/raft.log", 12) // inside the first frame; later frames are valid
	h.open()
	if !errors.Is(h.failed, meta.ErrCorrupt) {
		t.Fatalf("want corruption, got %v", h.failed)
	}
}

func TestRecoveryL5GapFails(t *testing.T) {
	h, _ := snapshotted(t, nil)
	h.run(create("after")) // the rewritten log now starts after the snapshot index
	must(t, h.d.Remove("meta/snap"))
	must(t, h.d.SyncDir("meta"))
	h.open()
	if !errors.Is(h.failed, meta.ErrCorrupt) {
		t.Fatalf("want a gap failure, got %v", h.failed)
	}
}

// Row L6: a crash after the snapshot is durable but before the log rewrite: the old log
// still holds the entries the snapshot covers; they are skipped, not applied twice.
func TestRecoveryL6EntriesBelowSnapshotSkipped(t *testing.T) {
	h := newHarness(t, meta.Config{SnapshotEveryEntries: 3}, nil)
	h.settle()
	var n int
	for n = 0; h.indexOf(disk.KindCreate, "meta/snap.tmp") < 0; n++ {
		h.propose(create(fmt.Sprintf("t%d", n)))
		for h.indexOf(disk.KindCreate, "meta/snap.tmp") < 0 && len(h.pending) > 0 {
			h.complete(0, nil)
		}
	}
	for h.indexOf(disk.KindCreate, "meta/raft.log.tmp") < 0 {
		h.complete(0, nil)
	}
	h.crash()
	if !hasDecision(h.recovered, "S2") || !hasDecision(h.recovered, "L6") {
		t.Fatalf("decisions %v", h.recovered.Decisions)
	}
	if got := meta.AppliedCommands(h.s); got != uint64(n) || len(h.s.Topics()) != n {
		t.Fatalf("applied commands %d, topics %d, want %d", got, len(h.s.Topics()), n)
	}
}

// Row L8 (metasim seed 149): a follower installs the leader's snapshot, and crashes after
// snap is renamed but before raft.log is rewritten. The old log holds a suffix from an
// older term past the snapshot index, which the snapshot replaced: recovery drops it
// instead of refusing the log because its terms go backwards.
func TestRecoveryL8SuffixReplacedBySnapshotDropped(t *testing.T) {
	h, created := snapshotted(t, nil)
	k, term := meta.SnapshotIndex(h.s), meta.SnapshotTerm(h.s)
	if term < 2 {
		t.Fatalf("snapshot term %d: the test needs an older term", term)
	}
	old := term - 1
	stale := meta.AppendLogFrame(nil, old, 1, k-1, []*raftpb.Entry{
		entry(k-1, old, raftpb.EntryNormal, nil), entry(k, old, raftpb.EntryNormal, nil)})
	stale = meta.AppendLogFrame(stale, 0, 0, 0, []*raftpb.Entry{entry(k+1, old, raftpb.EntryNormal, nil)})
	putFile(t, h.d, "meta/raft.log", stale)
	h.restart()
	if h.failed != nil || !hasDecision(h.recovered, "L8") {
		t.Fatalf("failure %v, recovery %+v", h.failed, h.recovered)
	}
	if h.recovered.LastIndex < k || names(h.s.Topics()) != strings.Join(created, ",") {
		t.Fatalf("last index %d (snapshot %d), topics %s", h.recovered.LastIndex, k, names(h.s.Topics()))
	}
	h.settle()
	if d := h.run(create("zz")); d.Err != nil {
		t.Fatal(d.Err)
	}
	h.crash()
	if hasDecision(h.recovered, "L8") || names(h.s.Topics()) != strings.Join(append(created, "zz"), ",") {
		t.Fatalf("after the rewrite: decisions %v topics %s", h.recovered.Decisions, names(h.s.Topics()))
	}
}

func entry(index, term uint64, typ raftpb.EntryType, data []byte) *raftpb.Entry {
	return &raftpb.Entry{Index: new(index), Term: new(term), Type: typ.Enum(), Data: data}
}

func bootstrapEntry(t *testing.T) *raftpb.Entry {
	cc, err := proto.Marshal(&raftpb.ConfChange{Type: raftpb.ConfChangeAddNode.Enum(), NodeId: new(uint64(1))})
	must(t, err)
	return entry(1, 1, raftpb.EntryConfChange, cc)
}

func TestRecoveryL7HardStateOutsideTheLogFails(t *testing.T) {
	for name, b := range map[string][]byte{
		"commit past the last entry": meta.AppendLogFrame(nil, 1, 1, 5, []*raftpb.Entry{bootstrapEntry(t)}),
		"terms going backwards": meta.AppendLogFrame(meta.AppendLogFrame(nil, 3, 1, 1,
			[]*raftpb.Entry{bootstrapEntry(t), entry(2, 3, raftpb.EntryNormal, nil)}),
			3, 1, 1, []*raftpb.Entry{entry(3, 2, raftpb.EntryNormal, nil)}),
		"term below the log's": meta.AppendLogFrame(nil, 1, 1, 1, []*raftpb.Entry{bootstrapEntry(t), entry(2, 4, raftpb.EntryNormal, nil)}),
	} {
		d := sim.NewDisk(rng.New(1), sim.DiskConfig{})
		putFile(t, d, "meta/raft.log", b)
		h := newHarness(t, meta.Config{}, d)
		if !errors.Is(h.failed, meta.ErrCorrupt) {
			t.Errorf("%s: want corruption, got %v", name, h.failed)
		}
	}
}

// An entry this binary cannot read stops the store at the same index on every replica.
func TestUndecodableEntryFails(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{})
	ents := []*raftpb.Entry{bootstrapEntry(t), entry(2, 1, raftpb.EntryNormal, []byte{9, '{', '}'})}
	putFile(t, d, "meta/raft.log", meta.AppendLogFrame(nil, 1, 1, 2, ents))
	h := newHarness(t, meta.Config{}, d)
	if !errors.Is(h.failed, meta.ErrCorrupt) || h.recovered != nil {
		t.Fatalf("want corruption, got %v", h.failed)
	}
}

// Frames written by hand in raft's order are recovered: a later frame's entries replace
// the earlier ones from their first index on (raft's log truncation).
func TestRecoveryLaterEntriesReplaceEarlier(t *testing.T) {
	cmd := func(name string) []byte {
		return []byte(`{"node":1,"seq":1,"now_ns":0,"kind":"create","name":"` + name + `","partitions":1,` +
			`"retention_ms":0,"visibility_timeout_ms":1,"max_in_flight_per_partition":1}`)
	}
	data := func(name string) []byte { return append([]byte{1}, cmd(name)...) }
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{})
	b := meta.AppendLogFrame(nil, 2, 1, 1, []*raftpb.Entry{bootstrapEntry(t),
		entry(2, 2, raftpb.EntryNormal, data("lost1")), entry(3, 2, raftpb.EntryNormal, data("lost2"))})
	b = meta.AppendLogFrame(b, 3, 1, 2, []*raftpb.Entry{entry(2, 3, raftpb.EntryNormal, data("kept"))})
	putFile(t, d, "meta/raft.log", b)
	h := newHarness(t, meta.Config{}, d)
	h.settle()
	if got := names(h.s.Topics()); got != "kept" {
		t.Fatalf("topics %s (decisions %v)", got, h.recovered.Decisions)
	}
	if got, _ := h.s.Topic("kept"); got.ID != 2 {
		t.Fatalf("incarnation id %d, want the entry index 2", got.ID)
	}
}

func TestRecoveryRereadsCorruptedReads(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{ReadCorruptProb: 0.3, ReadErrorProb: 0.1})
		d.SetFaults(false)
		h, created := snapshotted(t, d)
		h.run(create("z"))
		d.SetFaults(true)
		h.crash()
		if h.failed != nil || names(h.s.Topics()) != strings.Join(append(created, "z"), ",") {
			t.Fatalf("seed %d: failed %v topics %s", seed, h.failed, names(h.s.Topics()))
		}
	}
}

func TestRecoveryFailsOnPersistentReadErrors(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{ReadErrorProb: 1})
	d.SetFaults(false)
	h := settled(t, meta.Config{})
	h.d = d
	putFile(t, d, "meta/raft.log", meta.AppendLogFrame(nil, 1, 1, 1, []*raftpb.Entry{bootstrapEntry(t)}))
	d.SetFaults(true)
	h.open()
	if !errors.Is(h.failed, meta.ErrFailed) || h.recovered != nil {
		t.Fatalf("want a recovery failure, got %v", h.failed)
	}
}

// The snapshot sequence is ten ops (snap: create, write, sync, rename, sync dir; raft.log:
// the same). A crash after each prefix of them, with pending writes kept, torn or dropped
// and unsynced renames landing or not, loses no answered proposal and applies nothing
// twice. The same holds for a process restart that keeps the page cache.
func TestCrashAtEverySnapshotStep(t *testing.T) {
	rows := map[string]bool{}
	for step := 0; step <= 10; step++ {
		for seed := uint64(1); seed <= 12; seed++ {
			d := sim.NewDisk(rng.New(seed), sim.DiskConfig{CrashKeepProb: 0.4, CrashTearProb: 0.3, CrashGarbageProb: 0.5})
			h := newHarness(t, meta.Config{SnapshotEveryEntries: 4}, d)
			h.settle()
			var answered []string
			for i := 0; h.indexOf(disk.KindCreate, "meta/snap.tmp") < 0; i++ {
				if i > 10 {
					t.Fatal("no snapshot started")
				}
				name := fmt.Sprintf("t%02d", i)
				tok := h.propose(create(name))
				for h.done[tok].Token == 0 {
					h.complete(0, nil)
				}
				answered = append(answered, name)
			}
			h.propose(create("inflight")) // waits behind the snapshot: may survive, unanswered
			for range step {
				h.complete(0, nil)
			}
			if seed%3 == 0 {
				h.restart()
			} else {
				h.crash()
			}
			for _, r := range h.recovered.Decisions {
				rows[r[:2]] = true
			}
			topics := names(h.s.Topics())
			want := strings.Join(answered, ",")
			applied := meta.AppliedCommands(h.s)
			ok := topics == want && applied == uint64(len(answered)) ||
				topics == want+",inflight" && applied == uint64(len(answered)+1)
			if !ok {
				t.Fatalf("step %d seed %d: topics %s applied %d, want %s (decisions %v)", step, seed, topics, applied, want, h.recovered.Decisions)
			}
		}
	}
	for _, r := range []string{"S1", "S2", "L2", "L6"} {
		if !rows[r] {
			t.Errorf("row %s never taken (%v)", r, rows)
		}
	}
}
