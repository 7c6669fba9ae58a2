package node_test

import (
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// harness drives a Node on a simulated disk, completing ops in order and answering
// requests by token.
type harness struct {
	cfg   node.Config
	t     testing.TB
	d     *sim.Disk
	n     *node.Node
	now   int64
	ops   []disk.Op
	resps map[uint64]node.Response
	tok   uint64
	fail  error
	// failOp, when set, picks ops that fail with disk.ErrIO without touching the disk.
	failOp func(disk.Op) bool
}

func newHarness(t testing.TB, d *sim.Disk) *harness {
	return newHarnessWith(t, d, node.Config{NodeID: "n1", AckFlushIntervalNs: 10_000_000, Dispatch: dispatch.Config{LingerNs: -1}})
}

func newHarnessWith(t testing.TB, d *sim.Disk, cfg node.Config) *harness {
	if d == nil {
		d = sim.NewDisk(rng.New(1), sim.DiskConfig{})
	}
	h := &harness{t: t, d: d, now: 1_000_000_000, cfg: cfg}
	h.start()
	return h
}

func (h *harness) start() {
	h.n = node.New(h.cfg, rng.New(7))
	h.ops, h.resps, h.fail = nil, map[uint64]node.Response{}, nil
	h.n.Open(h.now)
	h.settle()
	for i := 0; i < 100 && h.n.IsReady() != nil; i++ {
		h.advance(100_000_000)
	}
	if err := h.n.IsReady(); err != nil {
		h.t.Fatalf("node not ready: %v", err)
	}
}

func (h *harness) crash() {
	h.d.Crash()
	h.start()
}

func (h *harness) pump() {
	rd := h.n.Ready()
	h.ops = append(h.ops, rd.Ops...)
	for _, r := range rd.Responses {
		h.resps[r.Token] = r
	}
	if rd.Failed != nil {
		h.fail = rd.Failed
	}
}

// settle completes every op, FIFO, until none is left.
func (h *harness) settle() {
	h.pump()
	for i := 0; len(h.ops) > 0; i++ {
		if i > 1_000_000 {
			h.t.Fatalf("ops never stop")
		}
		op := h.ops[0]
		h.ops = h.ops[1:]
		if h.failOp != nil && h.failOp(op) {
			h.n.DiskDone(h.now, disk.Result{ID: op.ID, Kind: op.Kind, Err: disk.ErrIO})
		} else {
			h.n.DiskDone(h.now, disk.Apply(h.d, op))
		}
		h.pump()
	}
}

// advance moves time forward by dt, firing deadlines on the way.
func (h *harness) advance(dt int64) {
	end := h.now + dt
	for {
		at, ok := h.n.NextDeadline()
		if !ok || at > end {
			break
		}
		h.now = max(h.now, at)
		h.n.Tick(h.now)
		h.settle()
	}
	h.now = end
	h.n.Tick(h.now)
	h.settle()
}

func (h *harness) do(f func(now int64, tok uint64)) node.Response {
	h.tok++
	tok := h.tok
	f(h.now, tok)
	h.settle()
	r, ok := h.resps[tok]
	if !ok {
		h.t.Fatalf("request %d not answered", tok)
	}
	return r
}
