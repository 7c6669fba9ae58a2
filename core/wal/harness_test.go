package wal_test

import (
	"fmt"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/sim"
)

// harness drives one Log against a simulated disk, holding issued ops until the test
// completes them, so a test decides exactly what is in flight.
// fataler is what the harness needs of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

type harness struct {
	t         fataler
	cfg       wal.Config
	d         *sim.Disk
	l         *wal.Log
	now       int64
	pending   []disk.Op
	done      map[uint64]wal.AppendDone
	recovered *wal.Recovery
	failed    error
	token     uint64
}

func newHarness(t fataler, cfg wal.Config, d *sim.Disk) *harness {
	if d == nil {
		d = sim.NewDisk(rng.New(1), sim.DiskConfig{})
	}
	h := &harness{t: t, cfg: cfg, d: d}
	h.open()
	return h
}

// open starts a fresh Log on the disk and runs recovery to the end.
func (h *harness) open() {
	h.l = wal.New(h.cfg)
	h.pending, h.done, h.recovered, h.failed = nil, map[uint64]wal.AppendDone{}, nil, nil
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
	for _, d := range rd.Done {
		if _, dup := h.done[d.Token]; dup {
			h.t.Fatalf("token %d answered twice", d.Token)
		}
		h.done[d.Token] = d
	}
	if rd.Recovered != nil {
		h.recovered = rd.Recovered
	}
	if rd.Failed != nil {
		h.failed = rd.Failed
	}
}

func (h *harness) append(topic string, payload []byte) uint64 {
	h.token++
	h.l.Append(h.now, h.token, wal.Record{Topic: topic, Partition: 1, Incarnation: 9, Payload: payload})
	h.pump()
	return h.token
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
	h.l.DiskDone(h.now, res)
	h.pump()
	return op
}

func (h *harness) completeAll() {
	for n := 0; len(h.pending) > 0; n++ {
		if n > 100000 {
			h.t.Fatalf("ops never stop coming")
		}
		h.complete(0, nil)
	}
}

// advance moves time to the next deadline, ticks, and completes everything.
func (h *harness) advance() {
	if at, ok := h.l.NextDeadline(); ok && at > h.now {
		h.now = at
	}
	h.l.Tick(h.now)
	h.pump()
	h.completeAll()
}

func (h *harness) pendingKinds() string {
	s := ""
	for _, op := range h.pending {
		s += fmt.Sprintf("%s %s;", op.Kind, op.Name)
	}
	return s
}
