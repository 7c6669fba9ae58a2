package plog_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// plogModel is what the test knows the log promised.
type plogModel struct {
	h        *harness
	acked    map[uint64]string   // offset -> entry of every commit answered durable
	written  map[uint64][]string // offset -> every entry ever committed at it
	inflight *attempt            // the commit not yet answered
	reads    map[uint64]uint64   // token -> offset of reads not yet answered
	maxHW    uint64              // every high-watermark ever reported is at most this
}

type attempt struct {
	token   uint64
	base    uint64
	entries []string
}

func render(e plog.Entry) string {
	if !e.HasKey {
		return "-|" + string(e.Payload)
	}
	return string(e.Key) + "|" + string(e.Payload)
}

// TestPlogStateMachine drives the log with random commits, completions in any order,
// failed writes, syncs, reads and truncates, reads, ticks (retention), process restarts
// and crashes, on a disk that also corrupts writes and reads, fails syncs and runs out of
// space by itself. After every restart it checks that the high-watermark never went back
// and that every acknowledged commit still at or above OldestOffset is readable byte for
// byte at its offsets; every served record must have been committed at its offset.
//
// The read cache is in play with small drawn bounds (so that it evicts) or the defaults:
// every answer, from the cache or the disk, is checked against the model; a read the
// cache answered must have issued no op; the bounds hold after every step; and every
// served record is scribbled over once checked, so an answer that aliased the cache
// would corrupt a later one.
func TestPlogStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{
			CrashKeepProb: rapid.Float64Range(0, 1).Draw(rt, "keep"),
			CrashTearProb: rapid.Float64Range(0, 0.5).Draw(rt, "tear"), CrashGarbageProb: 0.5,
			WriteCorruptProb: rapid.Float64Range(0, 0.3).Draw(rt, "writeCorrupt"),
			ReadCorruptProb:  rapid.Float64Range(0, 0.1).Draw(rt, "readCorrupt"),
			ReadErrorProb:    rapid.Float64Range(0, 0.05).Draw(rt, "readError"),
			SyncFailProb:     rapid.Float64Range(0, 0.1).Draw(rt, "syncFail"),
			NoSpaceProb:      rapid.Float64Range(0, 0.1).Draw(rt, "noSpace"),
		})
		cfg := plog.Config{
			SegmentBytesMax:   rapid.Int64Range(100, 1000).Draw(rt, "segmentBytesMax"),
			RetentionMs:       rapid.SampledFrom([]int64{0, 0, 500, 3000}).Draw(rt, "retentionMs"),
			RecoveryReadBytes: rapid.IntRange(64, 2048).Draw(rt, "recoveryReadBytes"),
			// 0 takes the defaults (64 batches, 8 MiB).
			ReadCacheBatchesMax: rapid.SampledFrom([]int{0, 1, 2, 3, 8}).Draw(rt, "readCacheBatchesMax"),
			ReadCacheBytesMax:   rapid.SampledFrom([]int{0, 150, 400, 2000}).Draw(rt, "readCacheBytesMax"),
			// Zeros ahead of the frames (prealloc.go), a few reads long at most: a zero tail
			// longer than a read is searched frame by frame like any damage, and the
			// default's 256 KiB would take thousands of reads of 64 bytes.
			PreallocBytes: rapid.SampledFrom([]int64{-1, 64, 300, 1000}).Draw(rt, "preallocBytes"),
		}
		m := &plogModel{acked: map[uint64]string{}, written: map[uint64][]string{}, reads: map[uint64]uint64{}}
		m.h = newHarness(rt, cfg, d)
		m.reopened(rt, false)
		actions := map[string]func(*rapid.T){
			"commit":   m.commit,
			"complete": m.complete,
			"fail":     m.fail,
			"read":     m.read,
			"readRun":  m.readRun,
			"tick":     m.tick,
			"crash":    func(t *rapid.T) { m.restart(t, true) },
			"restart":  func(t *rapid.T) { m.restart(t, false) },
		}
		for range 4 { // rapid averages 30 steps per Repeat: go deeper than that
			rt.Repeat(actions)
		}
	})
}

func (m *plogModel) commit(t *rapid.T) {
	if m.inflight != nil {
		t.Skip("one commit in flight at a time")
	}
	n := rapid.IntRange(1, 4).Draw(t, "entries")
	es := make([]plog.Entry, n)
	a := &attempt{base: m.h.l.HighWatermark()}
	for i := range es {
		es[i].Payload = rapid.SliceOfN(rapid.Byte(), 0, 120).Draw(t, "payload")
		if rapid.Bool().Draw(t, "hasKey") {
			es[i].HasKey, es[i].Key = true, rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "key")
		}
		a.entries = append(a.entries, render(es[i]))
		m.written[a.base+uint64(i)] = append(m.written[a.base+uint64(i)], render(es[i]))
	}
	m.h.token++
	a.token = m.h.token
	m.inflight = a
	m.h.l.Commit(m.h.now, a.token, es)
	m.h.pump()
	m.collect(t)
}

// collect checks the answers that arrived and moves them into the model.
func (m *plogModel) collect(t *rapid.T) {
	if a := m.inflight; a != nil {
		if c, ok := m.h.commits[a.token]; ok {
			m.inflight = nil
			if c.Err == nil {
				if c.BaseOffset != a.base || c.Count != len(a.entries) {
					t.Fatalf("commit %+v, want base %d count %d", c, a.base, len(a.entries))
				}
				for i, e := range a.entries {
					m.acked[a.base+uint64(i)] = e
				}
			} else if !errors.Is(c.Err, plog.ErrRetry) && !errors.Is(c.Err, plog.ErrFailed) {
				t.Fatalf("unexpected commit error %v", c.Err)
			}
		}
	}
	m.checkCacheBounds(t)
	hw := m.h.l.HighWatermark()
	if hw < m.maxHW {
		t.Fatalf("high-watermark went back from %d to %d", m.maxHW, hw)
	}
	m.maxHW = hw
	for _, tok := range slices.Sorted(mapsKeys(m.reads)) {
		r, ok := m.h.reads[tok]
		if !ok {
			continue
		}
		off := m.reads[tok]
		delete(m.reads, tok)
		m.checkRead(t, off, r)
	}
}

func mapsKeys(m map[uint64]uint64) func(func(uint64) bool) {
	return func(yield func(uint64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (m *plogModel) checkRead(t *rapid.T, off uint64, r plog.ReadDone) {
	if r.Err != nil {
		if errors.Is(r.Err, plog.ErrRemoved) && off < m.h.l.OldestOffset() {
			return
		}
		t.Fatalf("read at %d: %v", off, r.Err)
	}
	for i, rec := range r.Records {
		if rec.Offset != off+uint64(i) || rec.Offset >= m.h.l.HighWatermark() || rec.Offset < m.h.l.OldestOffset() {
			t.Fatalf("read at %d served offset %d (oldest %d, hw %d)", off, rec.Offset, m.h.l.OldestOffset(), m.h.l.HighWatermark())
		}
		got := render(plog.Entry{Key: rec.Key, HasKey: rec.HasKey, Payload: rec.Payload})
		if want, ok := m.acked[rec.Offset]; ok && got != want {
			t.Fatalf("acknowledged offset %d served %q, want %q", rec.Offset, got, want)
		}
		if !slices.Contains(m.written[rec.Offset], got) {
			t.Fatalf("offset %d served %q, never committed there", rec.Offset, got)
		}
		// The answer is the caller's: writing into it must not reach the cache.
		for j := range rec.Key {
			rec.Key[j] ^= 0xA5
		}
		for j := range rec.Payload {
			rec.Payload[j] ^= 0xA5
		}
	}
}

// checkCacheBounds: the read cache never holds more than its bounds.
func (m *plogModel) checkCacheBounds(t *rapid.T) {
	batchesMax, bytesMax := m.h.cfg.ReadCacheBatchesMax, m.h.cfg.ReadCacheBytesMax
	if batchesMax == 0 {
		batchesMax = plog.DefaultReadCacheBatchesMax
	}
	if bytesMax == 0 {
		bytesMax = plog.DefaultReadCacheBytesMax
	}
	if b, n := m.h.l.ReadCacheSize(); b > batchesMax || n > bytesMax || b < 0 || n < 0 || (b == 0) != (n == 0) {
		t.Fatalf("read cache holds %d batches and %d bytes, bounds %d and %d", b, n, batchesMax, bytesMax)
	}
}

func (m *plogModel) complete(t *rapid.T) {
	if len(m.h.pending) == 0 {
		t.Skip("nothing in flight")
	}
	m.h.complete(rapid.IntRange(0, len(m.h.pending)-1).Draw(t, "op"), nil)
	m.collect(t)
}

func (m *plogModel) fail(t *rapid.T) {
	if len(m.h.pending) == 0 {
		t.Skip("nothing in flight")
	}
	i := rapid.IntRange(0, len(m.h.pending)-1).Draw(t, "op")
	switch m.h.pending[i].Kind {
	case disk.KindWriteAt, disk.KindSync, disk.KindReadAt, disk.KindTruncate, disk.KindCreate:
	default:
		t.Skip("only data ops are failed here")
	}
	m.h.complete(i, disk.ErrIO)
	m.collect(t)
}

func (m *plogModel) read(t *rapid.T) {
	off := rapid.Uint64Range(0, m.h.l.HighWatermark()+2).Draw(t, "offset")
	m.readOne(t, off, rapid.IntRange(1, 5).Draw(t, "max"))
	m.collect(t)
}

// readRun reads a run of offsets one record at a time, as the node reads what it leased:
// reads of one batch share a fetch or hit the cache.
func (m *plogModel) readRun(t *rapid.T) {
	off := rapid.Uint64Range(0, m.h.l.HighWatermark()+2).Draw(t, "offset")
	for i := range rapid.IntRange(1, 6).Draw(t, "run") {
		m.readOne(t, off+uint64(i), 1)
	}
	m.collect(t)
}

// readOne issues a read. A cache hit must be answered in the same call, without any op;
// an answer in the same call with records must be a hit.
func (m *plogModel) readOne(t *rapid.T, off uint64, max int) {
	hits, ops := m.h.l.Stats().ReadCacheHits, len(m.h.pending)
	tok := m.h.read(off, max)
	m.reads[tok] = off
	r, answered := m.h.reads[tok]
	hit := m.h.l.Stats().ReadCacheHits != hits
	switch {
	case hit && (!answered || len(m.h.pending) != ops || len(r.Records) == 0 || r.Err != nil):
		t.Fatalf("cache hit at %d: answered %v %+v, %d ops issued", off, answered, r, len(m.h.pending)-ops)
	case answered && len(r.Records) > 0 && !hit:
		t.Fatalf("read at %d answered at once with records but not from the cache", off)
	}
}

func (m *plogModel) tick(t *rapid.T) {
	m.h.now += rapid.Int64Range(1, 2000).Draw(t, "ms") * 1_000_000
	m.h.l.Tick(m.h.now)
	m.h.pump()
	m.collect(t)
}

// restart ends the process (each op in flight ran or not; no answer arrives) and reopens
// the log, after a machine crash when crash is set. Once the log is poisoned, restarts
// are machine crashes: a failed fdatasync whose cut did not complete (it may fail too)
// followed by a bare process restart is the documented limit of the high-watermark
// guarantee (doc.go). TestFailedSyncRestartThenCrashKeepsHighWatermark covers the
// restart after a completed cut.
func (m *plogModel) restart(t *rapid.T, crash bool) {
	if m.h.l.Failed() != nil {
		crash = true
	}
	m.inflight = nil
	clear(m.reads)
	// Without a machine crash, an op that ran unheard does not fail: a failed fdatasync
	// nobody hears of is the documented double fault (doc.go). A crash makes any such
	// failure moot, since it leaves only the durable image.
	m.h.d.SetFaults(crash)
	for _, op := range m.h.pending {
		if rapid.Bool().Draw(t, "ranBeforeTheEnd") {
			disk.Apply(m.h.d, op) // the kernel did it; nobody heard back
		}
	}
	m.h.d.SetFaults(true)
	if crash {
		m.h.d.Crash()
	}
	m.h.open()
	m.reopened(t, crash)
}

// reopened finishes a reopen (a failed recovery stops the node; it is retried after a
// machine restart) and checks what the log promised.
func (m *plogModel) reopened(t *rapid.T, crashed bool) {
	for n := 0; m.h.failed != nil; n++ {
		if n == 5 {
			m.h.d.SetFaults(false)
		}
		if n > 5 {
			t.Fatalf("recovery keeps failing without faults: %v", m.h.failed)
		}
		m.h.crash()
	}
	m.h.d.SetFaults(true)
	r := m.h.recovered
	if r.HighWatermark < m.maxHW {
		t.Fatalf("recovered high-watermark %d below %d, reported before (crash %v, decisions %v)", r.HighWatermark, m.maxHW, crashed, r.Decisions)
	}
	// Only the frame in flight can be damaged, and it is the last: no hole. (R4 with no
	// offsets lost can appear when a read flips back a bit a corrupted write flipped.)
	// R6 can: the zeros past an older segment's last frame (prealloc.go), when a
	// corrupted write flipped some and the roll's trim was lost in a crash. R6 keeps them
	// and loses nothing; had it kept a frame's offsets out, the next segment would start
	// past the expected offset (R8), and that is still refused here.
	if r.Holes != 0 || hasDecision(r, "R8") {
		t.Fatalf("damage the fault model cannot cause: %v", r.Decisions)
	}
	m.maxHW = r.HighWatermark
	for off := range m.written { //narad:sorted (test: order does not matter)
		if off >= r.HighWatermark {
			delete(m.written, off) // cut or torn: the offsets will be committed again
		}
	}
	m.checkAcked(t)
}

// checkAcked reads every acknowledged offset still stored and compares it byte for byte.
func (m *plogModel) checkAcked(t *rapid.T) {
	offs := slices.Sorted(func(yield func(uint64) bool) {
		for o := range m.acked {
			if !yield(o) {
				return
			}
		}
	})
	for i := 0; i < len(offs); {
		off := offs[i]
		if off < m.h.l.OldestOffset() {
			i++
			continue
		}
		r := m.h.readNow(off, plog.EntriesMax)
		if r.Err != nil || len(r.Records) == 0 {
			t.Fatalf("acknowledged offset %d unreadable: %v (hw %d)", off, r.Err, m.h.l.HighWatermark())
		}
		m.checkRead(t, off, r)
		for i < len(offs) && offs[i] < off+uint64(len(r.Records)) {
			i++
		}
	}
	if len(m.h.pending) != 0 {
		panic(fmt.Sprintf("ops left after the checks: %s", m.h.pendingKinds()))
	}
}
