package plog_test

import (
	"fmt"
	"strings"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// fataler is what the harness needs of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

const testDir = "parts/000000000000002a-3"

// harness drives one Log against a simulated disk, holding issued ops until the test
// completes them, so a test decides exactly what is in flight and in which order.
type harness struct {
	t         fataler
	cfg       plog.Config
	d         *sim.Disk
	l         *plog.Log
	now       int64
	pending   []disk.Op
	trace     []disk.Op // every op completed, in order
	commits   map[uint64]plog.CommitDone
	reads     map[uint64]plog.ReadDone
	recovered *plog.Recovery
	failed    error
	token     uint64
	alter     func(op disk.Op, res *disk.Result) // when set, sees every result before the log does
}

func newHarness(t fataler, cfg plog.Config, d *sim.Disk) *harness {
	if d == nil {
		d = sim.NewDisk(rng.New(1), sim.DiskConfig{})
	}
	if cfg.Dir == "" {
		cfg.Dir = testDir
	}
	h := &harness{t: t, cfg: cfg, d: d, now: 1_000_000_000_000}
	h.open()
	return h
}

// open starts a fresh Log on the disk (a process restart) and runs recovery to the end.
func (h *harness) open() {
	h.l = plog.New(h.cfg)
	h.pending, h.trace, h.recovered, h.failed = nil, nil, nil, nil
	h.commits, h.reads = map[uint64]plog.CommitDone{}, map[uint64]plog.ReadDone{}
	h.l.Open(h.now)
	h.pump()
	h.completeAll()
	if h.recovered == nil && h.failed == nil {
		h.t.Fatalf("recovery did not finish")
	}
}

// crash loses the ops in flight, applies the disk's crash model and reopens.
func (h *harness) crash() {
	h.d.Crash()
	h.open()
}

func (h *harness) pump() {
	rd := h.l.Ready()
	h.pending = append(h.pending, rd.Ops...)
	for _, c := range rd.Commits {
		if _, dup := h.commits[c.Token]; dup {
			h.t.Fatalf("commit %d answered twice", c.Token)
		}
		h.commits[c.Token] = c
	}
	for _, r := range rd.Reads {
		if _, dup := h.reads[r.Token]; dup {
			h.t.Fatalf("read %d answered twice", r.Token)
		}
		h.reads[r.Token] = r
	}
	if rd.Recovered != nil {
		h.recovered = rd.Recovered
	}
	if rd.Failed != nil {
		if h.failed != nil {
			h.t.Fatalf("Failed reported twice")
		}
		h.failed = rd.Failed
	}
}

// commit starts a commit of entries built from the payloads (key "k"+payload when the
// payload starts with 'k', no key otherwise) and returns its token.
func (h *harness) commit(payloads ...string) uint64 {
	h.token++
	h.l.Commit(h.now, h.token, entries(payloads...))
	h.pump()
	return h.token
}

func entries(payloads ...string) []plog.Entry {
	es := make([]plog.Entry, len(payloads))
	for i, p := range payloads {
		es[i] = plog.Entry{Payload: []byte(p)}
		if strings.HasPrefix(p, "k") {
			es[i].HasKey, es[i].Key = true, []byte("key-"+p)
		}
	}
	return es
}

// read starts a read and returns its token.
func (h *harness) read(offset uint64, max int) uint64 {
	h.token++
	h.l.Read(h.now, h.token, offset, max)
	h.pump()
	return h.token
}

// readNow reads and completes every op until the answer is there.
func (h *harness) readNow(offset uint64, max int) plog.ReadDone {
	tok := h.read(offset, max)
	for n := 0; ; n++ {
		if r, ok := h.reads[tok]; ok {
			return r
		}
		if len(h.pending) == 0 || n > 10000 {
			h.t.Fatalf("read %d never answered", tok)
		}
		h.complete(0, nil)
	}
}

// complete performs pending op i on the disk (or answers it with failWith) and feeds it.
func (h *harness) complete(i int, failWith error) disk.Op {
	op := h.pending[i]
	h.pending = append(h.pending[:i], h.pending[i+1:]...)
	var res disk.Result
	if failWith != nil {
		res = disk.Result{ID: op.ID, Kind: op.Kind, Err: failWith}
	} else {
		res = disk.Apply(h.d, op)
	}
	if h.alter != nil {
		h.alter(op, &res)
	}
	h.trace = append(h.trace, op)
	h.l.DiskDone(h.now, res)
	h.pump()
	return op
}

// completeKind completes the first pending op of kind k, failing the test if none is.
func (h *harness) completeKind(k disk.Kind, failWith error) disk.Op {
	for i, op := range h.pending {
		if op.Kind == k {
			return h.complete(i, failWith)
		}
	}
	h.t.Fatalf("no pending %s op; pending: %s", k, h.pendingKinds())
	return disk.Op{}
}

func (h *harness) completeAll() {
	for n := 0; len(h.pending) > 0; n++ {
		if n > 100000 {
			h.t.Fatalf("ops never stop coming: last %v", h.trace[max(0, len(h.trace)-12):])
		}
		h.complete(0, nil)
	}
}

// commitNow commits and completes everything; it returns the answer.
func (h *harness) commitNow(payloads ...string) plog.CommitDone {
	tok := h.commit(payloads...)
	h.completeAll()
	c, ok := h.commits[tok]
	if !ok {
		h.t.Fatalf("commit %d not answered", tok)
	}
	return c
}

func (h *harness) pendingKinds() string {
	s := ""
	for _, op := range h.pending {
		s += fmt.Sprintf("%s %s;", op.Kind, op.Name)
	}
	return s
}

// kinds renders a list of ops as their kinds, for asserting an op sequence.
func kinds(ops []disk.Op) string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = op.Kind.String()
	}
	return strings.Join(s, ",")
}

// payloadsOf renders records as "offset=payload" pairs.
func payloadsOf(recs []plog.Stored) string {
	s := make([]string, len(recs))
	for i, r := range recs {
		s[i] = fmt.Sprintf("%d=%s", r.Offset, r.Payload)
	}
	return strings.Join(s, ",")
}

func segName(base uint64) string {
	return fmt.Sprintf("%s/%016x.log", testDir, base)
}
