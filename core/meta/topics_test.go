package meta_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/narad/narad/core/meta"
)

func settled(t *testing.T, cfg meta.Config) *harness {
	h := newHarness(t, cfg, nil)
	h.settle()
	return h
}

func TestCreateGetListPatchDelete(t *testing.T) {
	h := settled(t, meta.Config{})
	d := h.run(create("orders"))
	want := meta.Topic{Name: "orders", ID: d.Topic.ID, Partitions: 3, RetentionMs: 7 * 24 * 3600 * 1000,
		VisibilityTimeoutMs: 30_000, MaxInFlightPerPartition: 1024, CreatedAtMs: h.now / 1_000_000}
	if d.Err != nil || d.Topic != want || d.Topic.ID == 0 {
		t.Fatalf("create: %+v %v, want %+v", d.Topic, d.Err, want)
	}
	if got, ok := h.s.Topic("orders"); !ok || got != want {
		t.Fatalf("Topic: %+v %v", got, ok)
	}
	if got, ok := h.s.TopicByID(want.ID); !ok || got != want {
		t.Fatalf("TopicByID: %+v %v", got, ok)
	}
	c := meta.Command{Kind: meta.CreateTopic, Name: "a.b_c-1", Partitions: new(uint32(1)), RetentionMs: new(int64(0)),
		VisibilityTimeoutMs: new(int64(1)), MaxInFlightPerPartition: new(uint32(65_536))}
	if d := h.run(c); d.Err != nil || d.Topic.RetentionMs != 0 || d.Topic.Partitions != 1 || d.Topic.MaxInFlightPerPartition != 65_536 {
		t.Fatalf("create with fields: %+v %v", d.Topic, d.Err)
	}
	h.run(create("zeta"))
	if got := names(h.s.Topics()); got != "a.b_c-1,orders,zeta" {
		t.Fatalf("Topics not sorted by name: %s", got)
	}

	p := meta.Command{Kind: meta.PatchTopic, Name: "orders", Partitions: new(uint32(8)), RetentionMs: new(int64(5)),
		VisibilityTimeoutMs: new(int64(12 * 3600 * 1000)), MaxInFlightPerPartition: new(uint32(7))}
	d = h.run(p)
	want.Partitions, want.RetentionMs, want.VisibilityTimeoutMs, want.MaxInFlightPerPartition = 8, 5, 12*3600*1000, 7
	if d.Err != nil || d.Topic != want {
		t.Fatalf("patch: %+v %v, want %+v", d.Topic, d.Err, want)
	}
	if d := h.run(meta.Command{Kind: meta.PatchTopic, Name: "orders", Partitions: new(uint32(8))}); d.Err != nil || d.Topic != want {
		t.Fatalf("patch to the same partition count: %+v %v", d.Topic, d.Err)
	}
	if d := h.run(meta.Command{Kind: meta.PatchTopic, Name: "orders"}); d.Err != nil || d.Topic != want {
		t.Fatalf("empty patch: %+v %v", d.Topic, d.Err)
	}

	d = h.run(del("orders"))
	if d.Err != nil || d.Topic != want {
		t.Fatalf("delete: %+v %v", d.Topic, d.Err)
	}
	if _, ok := h.s.Topic("orders"); ok {
		t.Fatal("deleted topic still there")
	}
	if _, ok := h.s.TopicByID(want.ID); ok {
		t.Fatal("deleted topic still found by id")
	}
	if got := names(h.s.Topics()); got != "a.b_c-1,zeta" {
		t.Fatalf("Topics after delete: %s", got)
	}
}

func names(ts []meta.Topic) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Name)
	}
	return strings.Join(s, ",")
}

// Every invalid command is answered at once, without touching the disk.
func TestValidationErrors(t *testing.T) {
	h := settled(t, meta.Config{})
	h.run(create("t"))
	u32, i64 := func(v uint32) *uint32 { return &v }, func(v int64) *int64 { return &v }
	cases := []struct {
		name string
		c    meta.Command
		err  error
	}{
		{"empty name", create(""), meta.ErrInvalid},
		{"name too long", create(strings.Repeat("a", 201)), meta.ErrInvalid},
		{"dot", create("."), meta.ErrInvalid},
		{"dotdot", create(".."), meta.ErrInvalid},
		{"slash", create("a/b"), meta.ErrInvalid},
		{"space", create("a b"), meta.ErrInvalid},
		{"non-ascii", create("é"), meta.ErrInvalid},
		{"zero partitions", meta.Command{Kind: meta.CreateTopic, Name: "x", Partitions: u32(0)}, meta.ErrInvalid},
		{"too many partitions", meta.Command{Kind: meta.CreateTopic, Name: "x", Partitions: u32(1025)}, meta.ErrInvalid},
		{"negative retention", meta.Command{Kind: meta.CreateTopic, Name: "x", RetentionMs: i64(-1)}, meta.ErrInvalid},
		{"zero visibility", meta.Command{Kind: meta.CreateTopic, Name: "x", VisibilityTimeoutMs: i64(0)}, meta.ErrInvalid},
		{"visibility over 12 h", meta.Command{Kind: meta.CreateTopic, Name: "x", VisibilityTimeoutMs: i64(12*3600*1000 + 1)}, meta.ErrInvalid},
		{"zero in flight", meta.Command{Kind: meta.CreateTopic, Name: "x", MaxInFlightPerPartition: u32(0)}, meta.ErrInvalid},
		{"in flight over max", meta.Command{Kind: meta.CreateTopic, Name: "x", MaxInFlightPerPartition: u32(65_537)}, meta.ErrInvalid},
		{"patch bad visibility", meta.Command{Kind: meta.PatchTopic, Name: "t", VisibilityTimeoutMs: i64(-5)}, meta.ErrInvalid},
		{"patch zero partitions", meta.Command{Kind: meta.PatchTopic, Name: "t", Partitions: u32(0)}, meta.ErrInvalid},
		{"patch shrink", meta.Command{Kind: meta.PatchTopic, Name: "t", Partitions: u32(2)}, meta.ErrInvalid},
		{"delete with fields", meta.Command{Kind: meta.DeleteTopic, Name: "t", Partitions: u32(3)}, meta.ErrInvalid},
		{"unknown kind", meta.Command{Kind: 9, Name: "t"}, meta.ErrInvalid},
		{"zero kind", meta.Command{Name: "t"}, meta.ErrInvalid},
		{"exists", create("t"), meta.ErrExists},
		{"delete missing", del("nope"), meta.ErrNotFound},
		{"patch missing", meta.Command{Kind: meta.PatchTopic, Name: "nope", RetentionMs: i64(1)}, meta.ErrNotFound},
	}
	for _, c := range cases {
		tok := h.propose(c.c)
		d, ok := h.done[tok]
		if !ok || !errors.Is(d.Err, c.err) || len(h.pending) != 0 {
			t.Errorf("%s: answered %v with %v, want %v at once (ops %s)", c.name, ok, d.Err, c.err, h.pendingKinds())
		}
	}
	if d := h.done[h.propose(create("t"))]; d.Topic.Name != "t" || d.Topic.ID == 0 {
		t.Errorf("ErrExists carries the existing topic: %+v", d.Topic)
	}
	if d := h.run(create(strings.Repeat("a", 200))); d.Err != nil {
		t.Errorf("200-character name refused: %v", d.Err)
	}
	if d := h.run(meta.Command{Kind: meta.CreateTopic, Name: "max", Partitions: u32(1024)}); d.Err != nil || d.Topic.Partitions != 1024 {
		t.Errorf("1024 partitions refused: %v", d.Err)
	}
	for _, n := range []string{"...", ".a", "-", "_", "A-Z.0_9"} {
		if !meta.ValidName(n) {
			t.Errorf("%q should be a valid name", n)
		}
	}
}

// The apply is the truth: commands that conflict only with entries still in flight get
// through to the log and are answered by the apply.
func TestApplyDecidesConflicts(t *testing.T) {
	h := settled(t, meta.Config{})
	a, b := h.propose(create("x")), h.propose(create("x"))
	h.settle()
	if h.done[a].Err != nil || !errors.Is(h.done[b].Err, meta.ErrExists) || h.done[b].Topic.ID != h.done[a].Topic.ID {
		t.Fatalf("racing creates: %+v / %+v", h.done[a], h.done[b])
	}
	grow := meta.Command{Kind: meta.PatchTopic, Name: "x", Partitions: new(uint32(9))}
	shrink := meta.Command{Kind: meta.PatchTopic, Name: "x", Partitions: new(uint32(5))}
	a, b = h.propose(grow), h.propose(shrink)
	c, d := h.propose(del("x")), h.propose(del("x"))
	e := h.propose(meta.Command{Kind: meta.PatchTopic, Name: "x", RetentionMs: new(int64(1))})
	h.settle()
	if h.done[a].Err != nil || !errors.Is(h.done[b].Err, meta.ErrInvalid) {
		t.Fatalf("grow then shrink: %v / %v", h.done[a].Err, h.done[b].Err)
	}
	if h.done[c].Err != nil || !errors.Is(h.done[d].Err, meta.ErrNotFound) || !errors.Is(h.done[e].Err, meta.ErrNotFound) {
		t.Fatalf("delete, delete, patch: %v / %v / %v", h.done[c].Err, h.done[d].Err, h.done[e].Err)
	}
	if h.done[c].Topic.Partitions != 9 {
		t.Fatalf("deleted topic as it was: %+v", h.done[c].Topic)
	}
}

func TestIncarnationIDsNeverReused(t *testing.T) {
	h := settled(t, meta.Config{SnapshotEveryEntries: 4})
	seen := map[uint64]bool{}
	var last uint64
	for i := 0; i < 6; i++ {
		d := h.run(create("x"))
		if d.Err != nil || seen[d.Topic.ID] || d.Topic.ID <= last {
			t.Fatalf("round %d: id %d (seen %v, last %d) err %v", i, d.Topic.ID, seen, last, d.Err)
		}
		seen[d.Topic.ID], last = true, d.Topic.ID
		if i%2 == 1 {
			h.crash() // ids survive recovery, snapshots included, and stay unique after it
			if got, ok := h.s.Topic("x"); !ok || got.ID != last {
				t.Fatalf("after crash: %+v %v, want id %d", got, ok, last)
			}
		}
		if d := h.run(del("x")); d.Err != nil || d.Topic.ID != last {
			t.Fatalf("delete: %+v %v", d.Topic, d.Err)
		}
		if _, ok := h.s.TopicByID(last); ok {
			t.Fatal("old incarnation still found by id")
		}
	}
}

// CreatedAtMs comes from the proposer's clock inside the entry: replaying it after a crash
// at another time gives the same value.
func TestCreatedAtFromProposer(t *testing.T) {
	h := settled(t, meta.Config{})
	h.now = 5_000_123_456_789
	d := h.run(create("x"))
	if d.Topic.CreatedAtMs != 5_000_123 {
		t.Fatalf("created at %d", d.Topic.CreatedAtMs)
	}
	h.now += 1e12
	h.crash()
	if got, _ := h.s.Topic("x"); got != d.Topic {
		t.Fatalf("after replay %+v, want %+v", got, d.Topic)
	}
}
