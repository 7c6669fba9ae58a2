package walsim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/invariants"
	"github.com/narad/narad/sim"
	"github.com/narad/narad/sim/sched"
)

// Stats summarises a run.
type Stats struct {
	Appends, Acked, Failed, Ambiguous uint64
	Crashes, WALFailures, Recoveries  uint64
	Rotted                            uint64 // acknowledged records whose only copy rot.go damaged
	NoSpaceRefused                    uint64 // appends refused for a full device (never written)
	Checks                            uint64
	Disk                              sim.DiskStats
}

// Result is the outcome of one run.
type Result struct {
	Trace     string // hex FNV-1a 64 of every processed event
	Violation error  // nil when every invariant held
	Stats     Stats
}

type opRef struct {
	op disk.Op
}

// run is one simulation: the scheduler, the node, the clients and the model of what
// was promised to them.
type run struct {
	o     Options
	r     *rng.Rand
	s     sched.Scheduler[event]
	d     *sim.Disk
	trace *sched.Trace
	stats Stats

	log     *wal.Log
	epoch   uint64
	up      bool // the process is running (recovering or ready)
	ready   bool
	tickAt  int64
	healing bool

	model     model
	err       error
	noSpace   bool      // the device refused a write as full since the last restart
	fullSince int64     // when the device was first seen full (invariants.OperatorFreesFull)
	inflight  []disk.Op // ops issued and not yet performed, in issue order (Land decides them at a crash)
	// crashInWrite: the chain's crash waits for the next write (inwrite.go).
	crashInWrite bool
}

// AckedFloor is the fewest acknowledged appends a seed must have: one under it did too
// little work for its checks to mean anything.
const AckedFloor = 100

// Run executes the options' run and reports its trace hash and verdict.
func Run(o Options) Result {
	r := rng.New(o.Seed)
	u := &run{o: o, r: r, d: sim.NewDisk(r.Fork(), o.Disk), trace: sched.NewTrace(), model: newModel()}
	u.start()
	for c := 0; c < o.Clients; c++ {
		u.s.At(u.think(), event{kind: evAppend, client: c})
	}
	u.s.At(o.CheckpointNs, event{kind: evCheckpoint})
	if o.CrashGapNs[1] > 0 {
		u.s.At(u.crashGap(), event{kind: evCrash})
	}
	for step := 0; step < o.Steps && u.err == nil; step++ {
		e, ok := u.s.Next()
		if !ok {
			break
		}
		u.handle(e)
	}
	if u.err == nil {
		u.heal()
	}
	if u.err == nil && u.stats.Acked < AckedFloor {
		u.violate(fmt.Errorf("vacuous: %d appends acknowledged (floor %d): the seed proves nothing", u.stats.Acked, AckedFloor))
	}
	u.stats.Disk = u.d.Stats()
	return Result{Trace: u.trace.Sum(), Violation: u.err, Stats: u.stats}
}

func (u *run) think() int64 { return u.s.Now() + sched.Between(u.r, 0, u.o.ThinkMaxNs) }

func (u *run) crashGap() int64 {
	return u.s.Now() + sched.Between(u.r, u.o.CrashGapNs[0], u.o.CrashGapNs[1])
}

func (u *run) latency(op disk.Op) int64 {
	return sched.Latency(u.r, op, u.o.OpLatencyNs, u.o.SyncLatencyNs)
}

// record folds one line of the trace into the hash.
func (u *run) record(kind byte, vals ...uint64) { u.trace.Record(u.s.Now(), kind, vals...) }

func (u *run) violate(err error) {
	if u.err == nil {
		u.err = fmt.Errorf("t=%dns: %w", u.s.Now(), err)
	}
}

func (u *run) handle(e event) {
	switch e.kind {
	case evOpDone:
		if e.epoch == u.epoch && u.up {
			u.opDone(e.op.op)
		}
	case evAppend:
		u.clientAppend(e.client)
	case evTick:
		if e.epoch == u.epoch && u.up && u.s.Now() == u.tickAt {
			u.record('t')
			u.log.Tick(u.s.Now())
			u.drain()
		}
	case evCheckpoint:
		u.dispatch()
		if !u.healing {
			u.s.At(u.s.Now()+u.o.CheckpointNs, event{kind: evCheckpoint})
		}
	case evCrash:
		// Epoch 0: the periodic crash chain. Otherwise: the restart a WAL failure asked for.
		if e.epoch == u.epoch || e.epoch == 0 && !u.holdCrashForWrite() {
			u.crash()
		}
		if e.epoch == 0 && !u.healing {
			u.s.At(u.crashGap(), event{kind: evCrash})
		}
	case evRestart:
		if !u.up {
			u.freeSpace()
			u.start()
		}
	}
}

// start boots a new process on the disk: a fresh WAL that recovers from what is there.
func (u *run) start() {
	u.epoch++
	u.up, u.ready, u.tickAt = true, false, 0
	u.log = wal.New(u.o.WAL)
	u.record('o', u.epoch)
	u.log.Open(u.s.Now())
	u.drain()
}

// freeSpace: a node that stopped on a full device is restarted once the operator freed
// space (the WAL cannot free space held by records not yet dispatched, and a device that
// stays full for the whole run leaves a seed with no work: seeds 36, 74, 111, 161). The
// WAL's part is the clean stop: no acknowledged record lost, none acknowledged while full.
func (u *run) freeSpace() {
	if u.noSpace {
		u.record('s')
		u.d.SetFaults(false) // ends the full device, as an operator deleting other files would
		// Back on, unless the heal phase turned them off: a restart during it must not
		// bring faults back (seed 299 once zeros were written ahead: the final append
		// found the device filled again).
		u.d.SetFaults(!u.healing)
		u.noSpace = false
	}
}

// crash kills the process: ops in flight and unanswered appends are lost with it.
func (u *run) crash() {
	if !u.up {
		return
	}
	u.stats.Crashes++
	u.record('c', u.epoch)
	u.up, u.ready = false, false
	u.epoch++
	u.model.loseUnanswered(u)
	u.d.Land(u.inflight)
	u.inflight = nil
	u.d.Kill() // a process or a machine crash; the disk counts which
	u.rotAtCrash()
	u.check()
	u.s.At(u.s.Now()+u.o.RestartNs, event{kind: evRestart})
}

func (u *run) opDone(op disk.Op) {
	u.inflight = slices.DeleteFunc(u.inflight, func(o disk.Op) bool { return o.ID == op.ID })
	res := disk.Apply(u.d, op)
	u.noSpace = u.noSpace || errors.Is(res.Err, disk.ErrNoSpace)
	u.fullSince = invariants.OperatorFreesFull(u.d, u.fullSince, u.s.Now())
	errCode := uint64(0)
	if res.Err != nil {
		errCode = 1
	}
	u.record('d', op.ID, uint64(op.Kind), uint64(op.Off), uint64(len(op.Data)), uint64(len(res.Data)), errCode)
	u.log.DiskDone(u.s.Now(), res)
	u.drain()
	if op.Kind != disk.KindWriteAt && op.Kind != disk.KindReadAt && op.Kind != disk.KindList {
		u.check() // the durable image may have changed
	}
}

// drain carries out a Ready: schedule ops, answer clients, check a recovery.
func (u *run) drain() {
	rd := u.log.Ready()
	for _, op := range rd.Ops {
		u.inflight = append(u.inflight, op)
		lat := u.latency(op)
		u.s.At(u.s.Now()+lat, event{kind: evOpDone, epoch: u.epoch, op: opRef{op: op}})
		u.crashInFlight(op, lat)
	}
	acked := false
	for _, d := range rd.Done {
		acked = acked || d.Err == nil
		u.model.answered(u, d)
	}
	if rd.Recovered != nil {
		u.stats.Recoveries++
		u.ready = true
		u.model.recovered(u, rd.Recovered)
	}
	if rd.Failed != nil {
		// A failed fsync is fatal for the process: crash it and recover from the disk.
		u.stats.WALFailures++
		u.record('f')
		u.s.At(u.s.Now()+1, event{kind: evCrash, epoch: u.epoch})
	}
	if acked {
		u.check()
	}
	if at, ok := u.log.NextDeadline(); ok && at != u.tickAt {
		u.tickAt = max(at, u.s.Now())
		u.s.At(u.tickAt, event{kind: evTick, epoch: u.epoch})
	}
}
