package meta_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"testing/cryptotest"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// The reference model: a plain map, written apart from the store's code.

type refTopic struct {
	t   meta.Topic // ID left zero: the raft index is not the model's to predict
	pos int        // log position of the command that created it
}

type logCmd struct {
	cmd   meta.Command
	nowNs int64
}

func refValid(c meta.Command) error {
	n := c.Name
	if len(n) == 0 || len(n) > 200 || n == "." || n == ".." {
		return meta.ErrInvalid
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return meta.ErrInvalid
		}
	}
	bad := c.Partitions != nil && (*c.Partitions == 0 || *c.Partitions > 1024) ||
		c.RetentionMs != nil && *c.RetentionMs < 0 ||
		c.VisibilityTimeoutMs != nil && (*c.VisibilityTimeoutMs < 1 || *c.VisibilityTimeoutMs > 43_200_000) ||
		c.MaxInFlightPerPartition != nil && (*c.MaxInFlightPerPartition == 0 || *c.MaxInFlightPerPartition > 65_536)
	if bad || c.Kind < meta.CreateTopic || c.Kind > meta.PatchTopic {
		return meta.ErrInvalid
	}
	if c.Kind == meta.DeleteTopic && (c.Partitions != nil || c.RetentionMs != nil || c.VisibilityTimeoutMs != nil || c.MaxInFlightPerPartition != nil) {
		return meta.ErrInvalid
	}
	return nil
}

func or[T any](p *T, d T) T {
	if p == nil {
		return d
	}
	return *p
}

// refApply applies the command at log position pos to st and returns its answer.
func refApply(st map[string]refTopic, pos int, lc logCmd) (meta.Topic, error) {
	c := lc.cmd
	if err := refValid(c); err != nil {
		return meta.Topic{}, err
	}
	cur, ok := st[c.Name]
	switch c.Kind {
	case meta.CreateTopic:
		if ok {
			return cur.t, meta.ErrExists
		}
		t := meta.Topic{Name: c.Name, Partitions: or(c.Partitions, 3), RetentionMs: or(c.RetentionMs, 604_800_000),
			VisibilityTimeoutMs: or(c.VisibilityTimeoutMs, 30_000), MaxInFlightPerPartition: or(c.MaxInFlightPerPartition, 1024),
			CreatedAtMs: lc.nowNs / 1_000_000}
		st[c.Name] = refTopic{t: t, pos: pos}
		return t, nil
	case meta.DeleteTopic:
		if !ok {
			return meta.Topic{}, meta.ErrNotFound
		}
		delete(st, c.Name)
		return cur.t, nil
	default:
		if !ok {
			return meta.Topic{}, meta.ErrNotFound
		}
		if c.Partitions != nil && *c.Partitions < cur.t.Partitions {
			return cur.t, meta.ErrInvalid
		}
		t := cur.t
		t.Partitions, t.RetentionMs = or(c.Partitions, t.Partitions), or(c.RetentionMs, t.RetentionMs)
		t.VisibilityTimeoutMs = or(c.VisibilityTimeoutMs, t.VisibilityTimeoutMs)
		t.MaxInFlightPerPartition = or(c.MaxInFlightPerPartition, t.MaxInFlightPerPartition)
		st[c.Name] = refTopic{t: t, pos: cur.pos}
		return t, nil
	}
}

// replay returns the reference state after log[:n].
func replay(log []logCmd, n int) map[string]refTopic {
	st := map[string]refTopic{}
	for i := 0; i < n; i++ {
		refApply(st, i, log[i])
	}
	return st
}

// answerAt returns the reference answer of log[n].
func answerAt(log []logCmd, n int) (meta.Topic, error) {
	return refApply(replay(log, n), n, log[n])
}

var answerKinds = []error{meta.ErrInvalid, meta.ErrExists, meta.ErrNotFound}

func sameKind(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	for _, k := range answerKinds {
		if errors.Is(a, k) && errors.Is(b, k) {
			return true
		}
	}
	return false
}

// model is what the test knows the store promised.
type model struct {
	h      *harness
	log    []logCmd       // accepted commands, in log order (one leader: proposal order)
	floor  int            // a prefix this long must survive: its last command was answered
	tokens map[uint64]int // accepted, unanswered token -> log position
	ids    map[int]uint64 // log position of an answered create -> incarnation id
	lastID uint64
	bars   map[uint64]uint64 // barrier token -> applied commands it must see
}

// TestStoreStateMachine drives the store with creates, deletes and patches (valid or not),
// op completions, failed writes and syncs, ticks, barriers, crashes (pending writes kept,
// torn or dropped) and restarts, with snapshots every few entries. After every step the
// topics must equal the reference applied to exactly the commands the store counts as
// applied; no answered command may be lost; every answer must match the reference.
func TestStoreStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		cryptotest.SetGlobalRandom(t, seed) // raft's election jitter: reproducible per check
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{
			CrashKeepProb:    rapid.Float64Range(0, 1).Draw(rt, "keep"),
			CrashTearProb:    rapid.Float64Range(0, 0.5).Draw(rt, "tear"),
			CrashGarbageProb: 0.5,
			ReadCorruptProb:  rapid.Float64Range(0, 0.1).Draw(rt, "readcorrupt"),
		})
		cfg := meta.Config{SnapshotEveryEntries: rapid.Uint64Range(2, 8).Draw(rt, "snapEvery"), TickIntervalNs: 1000}
		m := &model{h: newHarness(rt, cfg, d), tokens: map[uint64]int{}, ids: map[int]uint64{}, bars: map[uint64]uint64{}}
		m.h.settle()
		rt.Repeat(map[string]func(*rapid.T){
			"create":   func(t *rapid.T) { m.propose(t, meta.CreateTopic) },
			"delete":   func(t *rapid.T) { m.propose(t, meta.DeleteTopic) },
			"patch":    func(t *rapid.T) { m.propose(t, meta.PatchTopic) },
			"complete": m.complete,
			"fail":     m.fail,
			"tick":     func(*rapid.T) { m.h.tick(); m.collect() },
			"settle":   func(*rapid.T) { m.h.settle(); m.collect() },
			"barrier":  func(*rapid.T) { m.bars[m.h.barrier()] = uint64(m.floor); m.collect() },
			"crash":    func(*rapid.T) { m.forget(); m.h.crash(); m.afterRestart() },
			"restart":  func(*rapid.T) { m.forget(); m.h.restart(); m.afterRestart() },
			"": func(*rapid.T) {
				m.check()
			},
		})
	})
}

var (
	nameGen = rapid.SampledFrom([]string{"a", "b", "c", "a", "b", "c", "", ".", "x/y"})
	partGen = rapid.SampledFrom([]uint32{0, 1, 2, 5, 9, 1025})
	retGen  = rapid.SampledFrom([]int64{-1, 0, 5})
	visGen  = rapid.SampledFrom([]int64{0, 1, 30_000, 43_200_001})
	mifGen  = rapid.SampledFrom([]uint32{0, 1, 7, 65_537})
)

func maybe[T any](t *rapid.T, g *rapid.Generator[T], label string) *T {
	if rapid.IntRange(0, 2).Draw(t, label+"?") != 0 {
		return nil
	}
	v := g.Draw(t, label)
	return &v
}

func (m *model) propose(t *rapid.T, kind meta.CommandKind) {
	c := meta.Command{Kind: kind, Name: nameGen.Draw(t, "name")}
	if kind != meta.DeleteTopic || rapid.IntRange(0, 9).Draw(t, "deleteWithFields") == 0 {
		c.Partitions, c.RetentionMs = maybe(t, partGen, "partitions"), maybe(t, retGen, "retention")
		c.VisibilityTimeoutMs, c.MaxInFlightPerPartition = maybe(t, visGen, "visibility"), maybe(t, mifGen, "maxInFlight")
	}
	m.h.now += 1_000_000 // distinct CreatedAtMs per proposal
	tok := m.h.propose(c)
	if d, ok := m.h.done[tok]; ok { // refused at once: not in the log
		if errors.Is(d.Err, meta.ErrNotLeader) || errors.Is(d.Err, meta.ErrBusy) || errors.Is(d.Err, meta.ErrFailed) {
			m.collect()
			return
		}
		// Refused before the log only when the local topics are the end of the log.
		_, want := answerAt(append(m.log[:len(m.log):len(m.log)], logCmd{cmd: c, nowNs: m.h.now}), len(m.log))
		if d.Err == nil || !sameKind(d.Err, want) {
			t.Fatalf("immediate answer %v for %+v, reference says %v", d.Err, c, want)
		}
	} else {
		m.tokens[tok] = len(m.log)
		m.log = append(m.log, logCmd{cmd: c, nowNs: m.h.now})
	}
	m.collect()
}

// collect checks every new answer against the reference at its log position.
func (m *model) collect() {
	t := m.h.t
	toks := slices.SortedFunc(maps.Keys(m.tokens), func(a, b uint64) int { return m.tokens[a] - m.tokens[b] })
	for _, tok := range toks { // in log order: incarnation ids grow along the log
		pos := m.tokens[tok]
		d, ok := m.h.done[tok]
		if !ok {
			continue
		}
		delete(m.tokens, tok)
		if errors.Is(d.Err, meta.ErrFailed) || errors.Is(d.Err, meta.ErrTimeout) {
			continue // outcome unknown
		}
		want, wantErr := answerAt(m.log, pos)
		if !sameKind(d.Err, wantErr) {
			t.Fatalf("token %d at log position %d (%+v): answered %v, reference %v", tok, pos, m.log[pos].cmd, d.Err, wantErr)
		}
		m.floor = max(m.floor, pos+1)
		if d.Err != nil {
			continue
		}
		got := d.Topic
		if m.log[pos].cmd.Kind == meta.CreateTopic {
			if got.ID <= m.lastID {
				t.Fatalf("incarnation id %d not above the last one %d", got.ID, m.lastID)
			}
			m.lastID, m.ids[pos] = got.ID, got.ID
		}
		got.ID = 0
		if got != want {
			t.Fatalf("token %d answered %+v, reference %+v", tok, got, want)
		}
	}
	for tok, floor := range m.bars { //narad:unordered
		if b, ok := m.h.barriers[tok]; ok {
			delete(m.bars, tok)
			if b.Err == nil && meta.AppliedCommands(m.h.s) < floor {
				t.Fatalf("barrier answered before the replica applied %d commands", floor)
			}
		}
	}
	m.check()
}

// check: the store's topics are the reference applied to the commands it counts.
func (m *model) check() {
	t, h := m.h.t, m.h
	if h.failed != nil {
		return
	}
	k := meta.AppliedCommands(h.s)
	if k < uint64(m.floor) || k > uint64(len(m.log)) {
		t.Fatalf("store applied %d commands; answered prefix %d, log %d", k, m.floor, len(m.log))
	}
	ref := replay(m.log, int(k))
	got := h.s.Topics()
	if len(got) != len(ref) {
		t.Fatalf("store has %s, reference has %d topics", describe(got), len(ref))
	}
	for _, g := range got {
		r, ok := ref[g.Name]
		id := g.ID
		g.ID = 0
		if !ok || g != r.t {
			t.Fatalf("store topic %+v, reference %+v %v", g, r.t, ok)
		}
		if want, known := m.ids[r.pos]; known && want != id {
			t.Fatalf("topic %s has id %d, its create was answered with %d", g.Name, id, want)
		}
		if byID, ok := h.s.TopicByID(id); !ok || byID.Name != g.Name {
			t.Fatalf("TopicByID(%d) = %+v %v", id, byID, ok)
		}
	}
}

func (m *model) complete(t *rapid.T) {
	if len(m.h.pending) == 0 {
		t.Skip("nothing in flight")
	}
	m.h.complete(rapid.IntRange(0, len(m.h.pending)-1).Draw(t, "op"), nil)
	m.collect()
}

// fail fails a write or sync; the node then restarts, with or without losing its cache.
func (m *model) fail(t *rapid.T) {
	i := -1
	for j, op := range m.h.pending {
		if op.Kind == disk.KindSync || op.Kind == disk.KindWriteAt {
			i = j
		}
	}
	if i < 0 {
		t.Skip("no write or sync in flight")
	}
	m.h.complete(i, disk.ErrIO)
	if m.h.failed == nil {
		t.Fatalf("a failed write or sync must fail the store")
	}
	m.collect()
	m.forget()
	if rapid.Bool().Draw(t, "crashAfterFail") {
		m.h.crash()
	} else {
		m.h.restart()
	}
	m.afterRestart()
}

func (m *model) forget() {
	clear(m.tokens) // answers are lost with the process
	clear(m.bars)
}

// afterRestart: the settled store applied a prefix of the log at least as long as the
// answered one; the rest of the log is gone for good.
func (m *model) afterRestart() {
	t, h := m.h.t, m.h
	if h.failed != nil {
		t.Fatalf("recovery failed: %v", h.failed)
	}
	k := int(meta.AppliedCommands(h.s))
	if k < m.floor || k > len(m.log) {
		panic(fmt.Sprintf("recovered %d commands; answered prefix %d, log %d (decisions %v)", k, m.floor, len(m.log), h.recovered.Decisions))
	}
	m.log, m.floor = m.log[:k], k
	for pos := range m.ids { //narad:unordered
		if pos >= k {
			delete(m.ids, pos)
		}
	}
	m.check()
}
