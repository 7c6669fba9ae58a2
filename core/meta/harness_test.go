package meta_test

import (
	"fmt"
	"strings"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// fataler is what the harness needs of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
	Helper()
}

// harness drives one Store against a simulated disk, holding issued ops until the test
// completes them, so a test decides exactly what is in flight.
type harness struct {
	t         fataler
	cfg       meta.Config
	d         *sim.Disk
	s         *meta.Store
	now       int64
	pending   []disk.Op
	done      map[uint64]meta.ProposeDone
	barriers  map[uint64]meta.BarrierDone
	recovered *meta.Recovery
	failed    error
	token     uint64
	opsDone   int  // ops completed since open
	learners  bool // members outside the voters were heard: raft sends them the log
}

func newHarness(t fataler, cfg meta.Config, d *sim.Disk) *harness {
	if d == nil {
		d = sim.NewDisk(rng.New(1), sim.DiskConfig{})
	}
	h := &harness{t: t, cfg: cfg, d: d, now: 1_000_000_000}
	h.open()
	return h
}

// open starts a fresh Store on the disk and runs recovery to the end (without settling).
func (h *harness) open() {
	h.t.Helper()
	h.s = meta.New(h.cfg)
	h.pending, h.recovered, h.failed = nil, nil, nil
	h.done, h.barriers = map[uint64]meta.ProposeDone{}, map[uint64]meta.BarrierDone{}
	h.opsDone = 0
	h.s.Open(h.now)
	h.pump()
	for n := 0; h.recovered == nil && h.failed == nil; n++ {
		if n > 10000 || len(h.pending) == 0 {
			h.t.Fatalf("recovery did not finish: pending %s", h.pendingKinds())
		}
		h.complete(0, nil)
	}
}

// crash loses the ops in flight and the process, applies the disk's crash model, reopens
// and settles.
func (h *harness) crash() {
	h.t.Helper()
	h.d.Crash()
	h.now += 1_000_000
	h.open()
	if h.failed == nil {
		h.settle()
	}
}

// restart loses the process but not the machine: the page cache survives.
func (h *harness) restart() {
	h.t.Helper()
	h.open()
	if h.failed == nil {
		h.settle()
	}
}

func (h *harness) pump() {
	h.t.Helper()
	rd := h.s.Ready()
	h.pending = append(h.pending, rd.Ops...)
	for _, d := range rd.Done {
		if _, dup := h.done[d.Token]; dup {
			h.t.Fatalf("token %d answered twice", d.Token)
		}
		h.done[d.Token] = d
	}
	for _, b := range rd.Barriers {
		if _, dup := h.barriers[b.Token]; dup {
			h.t.Fatalf("barrier %d answered twice", b.Token)
		}
		h.barriers[b.Token] = b
	}
	if len(rd.Messages) > 0 && !h.learners {
		h.t.Fatalf("one voter sent messages: %v", rd.Messages)
	}
	if rd.Recovered != nil {
		h.recovered = rd.Recovered
	}
	if rd.Failed != nil {
		h.failed = rd.Failed
	}
}

// complete performs pending op i on the disk (or answers it with failWith) and feeds it.
func (h *harness) complete(i int, failWith error) disk.Op {
	h.t.Helper()
	op := h.pending[i]
	h.pending = append(h.pending[:i], h.pending[i+1:]...)
	var res disk.Result
	if failWith != nil {
		res = disk.Result{ID: op.ID, Kind: op.Kind, Err: failWith}
	} else {
		res = disk.Apply(h.d, op)
	}
	h.opsDone++
	h.s.DiskDone(h.now, res)
	h.pump()
	return op
}

func (h *harness) completeAll() {
	h.t.Helper()
	for n := 0; len(h.pending) > 0; n++ {
		if n > 100000 {
			h.t.Fatalf("ops never stop coming")
		}
		h.complete(0, nil)
	}
}

// tick moves time to the next deadline and ticks.
func (h *harness) tick() {
	if at, ok := h.s.NextDeadline(); ok && at > h.now {
		h.now = at
	}
	h.s.Tick(h.now)
	h.pump()
}

// settle completes ops and ticks until the store is a caught-up leader with nothing in
// flight and every entry of its log applied.
func (h *harness) settle() {
	h.t.Helper()
	for n := 0; ; n++ {
		h.completeAll()
		if h.failed != nil {
			h.t.Fatalf("store failed while settling: %v", h.failed)
		}
		if h.s.Leader() && h.s.CaughtUp() && meta.LogLastIndex(h.s) == h.s.AppliedIndex() && meta.Idle(h.s) {
			return
		}
		if n > 200 {
			h.t.Fatalf("store does not settle: leader %v caught up %v applied %d last %d pending %s",
				h.s.Leader(), h.s.CaughtUp(), h.s.AppliedIndex(), meta.LogLastIndex(h.s), h.pendingKinds())
		}
		h.tick()
	}
}

func (h *harness) propose(c meta.Command) uint64 {
	h.token++
	h.s.Propose(h.now, h.token, c)
	h.pump()
	return h.token
}

func (h *harness) barrier() uint64 {
	h.token++
	h.s.Barrier(h.now, h.token)
	h.pump()
	return h.token
}

// run proposes c, settles, and returns the answer.
func (h *harness) run(c meta.Command) meta.ProposeDone {
	h.t.Helper()
	tok := h.propose(c)
	h.settle()
	d, ok := h.done[tok]
	if !ok {
		h.t.Fatalf("proposal %d not answered after settling", tok)
	}
	return d
}

func (h *harness) pendingKinds() string {
	var s []string
	for _, op := range h.pending {
		s = append(s, op.String())
	}
	return strings.Join(s, "; ")
}

func create(name string) meta.Command { return meta.Command{Kind: meta.CreateTopic, Name: name} }
func del(name string) meta.Command    { return meta.Command{Kind: meta.DeleteTopic, Name: name} }

func describe(ts []meta.Topic) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("%s/%d/p%d/r%d/v%d/m%d", t.Name, t.ID, t.Partitions, t.RetentionMs, t.VisibilityTimeoutMs, t.MaxInFlightPerPartition))
	}
	return strings.Join(s, " ")
}
