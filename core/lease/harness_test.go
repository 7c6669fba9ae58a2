package lease_test

import (
	"fmt"
	"strings"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// fataler is what the harness needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// harness drives one Manager against a simulated disk, holding issued ops until the test
// completes them, so that a test decides exactly what is in flight.
type harness struct {
	t         fataler
	cfg       lease.Config
	d         *sim.Disk
	m         *lease.Manager
	now       int64
	hw        uint64
	oldest    uint64
	opens     uint64
	pending   []disk.Op
	recovered *lease.Recovery
	failed    error
}

const testDir = "acks/000000000000002a-3"

func newHarness(t fataler, cfg lease.Config, d *sim.Disk) *harness {
	t.Helper()
	if d == nil {
		d = sim.NewDisk(rng.New(1), sim.DiskConfig{})
	}
	if cfg.Dir == "" {
		cfg.Dir = testDir
	}
	h := &harness{t: t, cfg: cfg, d: d}
	h.open()
	return h
}

// open starts a fresh Manager on the disk, tells it the partition's high-watermark and
// oldest offset as the node does, and runs recovery to the end.
func (h *harness) open() {
	h.t.Helper()
	h.opens++
	h.m = lease.New(h.cfg, rng.New(1000+h.opens))
	h.pending, h.recovered, h.failed = nil, nil, nil
	h.m.Open(h.now)
	h.m.SetOldest(h.oldest)
	h.m.SetHighWatermark(h.hw)
	h.pump()
	h.completeAll()
	if h.recovered == nil && h.failed == nil {
		h.t.Fatalf("recovery did not finish")
	}
}

// crash loses the ops in flight, applies the disk's crash model and reopens.
func (h *harness) crash() {
	h.t.Helper()
	h.d.Crash()
	h.open()
}

func (h *harness) pump() {
	rd := h.m.Ready()
	h.pending = append(h.pending, rd.Ops...)
	if rd.Recovered != nil {
		if h.recovered != nil {
			h.t.Fatalf("recovered twice")
		}
		h.recovered = rd.Recovered
	}
	if rd.Failed != nil {
		if h.failed != nil {
			h.t.Fatalf("failed twice")
		}
		h.failed = rd.Failed
	}
}

// complete performs pending op i on the disk (or answers it with failWith) and feeds it.
func (h *harness) complete(i int, failWith error) disk.Op {
	op := h.pending[i]
	h.pending = append(h.pending[:i], h.pending[i+1:]...)
	res := disk.Result{ID: op.ID, Kind: op.Kind, Err: failWith}
	if failWith == nil {
		res = disk.Apply(h.d, op)
	}
	h.m.DiskDone(h.now, res)
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

// advance moves time on by dt, ticks and leaves the ops issued pending.
func (h *harness) advance(dt int64) {
	h.now += dt
	h.m.Tick(h.now)
	h.pump()
}

// flush moves time to the pending flush, ticks and completes everything.
func (h *harness) flush() {
	h.t.Helper()
	h.advance(h.cfg.AckFlushIntervalNs)
	h.completeAll()
}

func (h *harness) setHW(hw uint64) {
	h.hw = hw
	h.m.SetHighWatermark(hw)
}

func (h *harness) setOldest(o uint64) {
	h.oldest = o
	h.m.SetOldest(o)
}

func (h *harness) lease(n int) []lease.Receipt {
	rs := h.m.Lease(h.now, n)
	h.pump()
	return rs
}

func (h *harness) ack(r lease.Receipt) error {
	err := h.m.Ack(h.now, r.Offset, r.Nonce)
	h.pump()
	return err
}

func (h *harness) mustAck(r lease.Receipt) {
	h.t.Helper()
	if err := h.ack(r); err != nil {
		h.t.Fatalf("ack %d: %v", r.Offset, err)
	}
}

func offsets(rs []lease.Receipt) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprint(r.Offset))
	}
	return strings.Join(s, ",")
}

func (h *harness) pendingKinds() string {
	var s []string
	for _, op := range h.pending {
		s = append(s, op.Kind.String()+" "+op.Name)
	}
	return strings.Join(s, "; ")
}

func hasDecision(r *lease.Recovery, row string) bool {
	for _, d := range r.Decisions {
		if strings.HasPrefix(d, row+" ") {
			return true
		}
	}
	return false
}

func newRand() *rng.Rand { return rng.New(7) }
