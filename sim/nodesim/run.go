package nodesim

import (
	"fmt"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/invariants"
	"github.com/narad/narad/sim"
	"github.com/narad/narad/sim/sched"
)

type eventKind uint8

const (
	evOpDone eventKind = iota + 1
	evClient
	evTick
	evCrash
	evRestart
	evSetup // retry creating the topics
	evLater // a consumer's delayed ack, extend or nack
	evDoom  // the doomed topic's next step (reclaim.go)
)

// AckFlushIntervalNs is the node's ack-flush interval here (core/lease): short, so that
// crashes often fall inside the window and outside it.
const AckFlushIntervalNs = 5_000_000

// event is one scheduled input; epoch ties node events to one incarnation of the process.
type event struct {
	kind   eventKind
	epoch  uint64
	client int
	op     disk.Op
	handle string // evLater
	mode   node.AckMode
}

// Result is the outcome of one run.
type Result struct {
	Trace     string
	Violation error
	Stats     Stats
}

type run struct {
	o     Options
	r     *rng.Rand
	s     sched.Scheduler[event]
	d     *sim.Disk
	trace *sched.Trace
	stats Stats
	err   error

	n       *node.Node
	epoch   uint64
	up      bool
	tickAt  int64
	healing bool
	steps   int

	topics       []topicInfo
	setup        bool // topics created: clients run
	setupRetryAt int64
	lastTickNs   int64 // time of the last tick, and how many ticks in a row came at it
	ticksAtLast  int
	pending      map[uint64]request
	nextTok      uint64
	m            model
	hist         *invariants.PartitionHistory // for the linearizability check after healing
	healScans    int
	crashes      []int64           // when the process died, in order
	crashDamage  map[string]uint64 // ack directory -> the disk's damage count of its files at the last crash
	// crashInCommit: the chain's crash waits for the next partition-log write (incommit.go).
	crashInCommit bool
	doom          doomState          // the doomed topic (reclaim.go)
	poison        *invariants.Poison // failed partition ops and reopens (poison.go)
	moves         *invariants.Moves  // the dispatcher's reroutes off a failed partition (poison.go)
	fullSince     int64              // when the device was first seen full (invariants.OperatorFreesFull)
}

type topicInfo struct {
	name  string
	id    uint64
	parts uint32
}

// Run executes the options' run and reports its trace hash and verdict.
func Run(o Options) Result {
	r := rng.New(o.Seed)
	u := &run{o: o, r: r, d: sim.NewDisk(r.Fork(), o.Disk), trace: sched.NewTrace(),
		pending: map[uint64]request{}, m: newModel(), hist: invariants.NewPartitionHistory(), crashDamage: map[string]uint64{},
		poison: invariants.NewPoison(), moves: invariants.NewMoves()}
	u.start()
	for c := 0; c < o.Producers+o.Consumers; c++ {
		u.s.At(u.think(), event{kind: evClient, client: c})
	}
	if o.CrashGapNs[1] > 0 {
		u.s.At(u.crashGap(), event{kind: evCrash})
	}
	if o.DoomAtNs > 0 {
		u.s.At(o.DoomAtNs, event{kind: evDoom})
	}
	for u.steps = 0; u.steps < o.Steps && u.err == nil; u.steps++ {
		e, ok := u.s.Next()
		if !ok {
			break
		}
		u.handle(e)
		if u.steps%o.CheckEvery == 0 {
			u.checkDurable()
		}
	}
	if u.err == nil {
		u.heal()
	}
	if u.err == nil {
		u.checkVacuous()
	}
	u.stats.Disk = u.d.Stats()
	return Result{Trace: u.trace.Sum(), Violation: u.err, Stats: u.stats}
}

func (u *run) think() int64 { return u.s.Now() + sched.Between(u.r, 0, u.o.ThinkMaxNs) }

func (u *run) crashGap() int64 {
	lo, hi := u.o.CrashGapNs[0], u.o.CrashGapNs[1]
	return u.s.Now() + sched.Between(u.r, lo, hi)
}

func (u *run) latency(op disk.Op) int64 {
	return sched.Latency(u.r, op, u.o.OpLatencyNs, u.o.SyncLatencyNs)
}

// record folds one line of the trace into the hash.
func (u *run) record(kind byte, vals ...uint64) { u.trace.Record(u.s.Now(), kind, vals...) }

// violate records the first violation; its message starts with the check's name.
func (u *run) violate(err error) {
	if u.err == nil {
		u.err = fmt.Errorf("%w (seed time %d ns)", err, u.s.Now())
	}
}

func (u *run) handle(e event) {
	switch e.kind {
	case evOpDone:
		if e.epoch == u.epoch && u.up {
			res := disk.Apply(u.d, e.op)
			if u.crashAfterCommitWrite(e.op, res) {
				return
			}
			u.record('d', e.op.ID, uint64(e.op.Kind), uint64(e.op.Off), uint64(len(e.op.Data)), uint64(len(res.Data)), boolBit(res.Err != nil))
			u.poison.OpDone(u.s.Now(), e.op.Name, res.Err)
			u.fullSince = invariants.OperatorFreesFull(u.d, u.fullSince, u.s.Now())
			u.n.DiskDone(u.s.Now(), res)
			u.drain()
		}
	case evClient:
		u.clientStep(e.client)
	case evTick:
		if e.epoch == u.epoch && u.up && u.s.Now() == u.tickAt {
			u.checkTickProgress()
			u.record('t')
			u.tickAt = 0
			u.n.Tick(u.s.Now())
			u.drain()
		}
	case evCrash:
		if e.epoch == 0 && u.healing {
			return // the heal phase stops the crash schedule; node failures still restart
		}
		if e.epoch == u.epoch || e.epoch == 0 && !u.holdCrashForCommit() {
			u.crash()
		}
		if e.epoch == 0 && !u.healing {
			u.s.At(u.crashGap(), event{kind: evCrash})
		}
	case evRestart:
		if !u.up {
			u.start()
		}
	case evSetup:
		if u.up {
			u.maybeSetup()
		}
	case evLater:
		u.onLater(e)
	case evDoom:
		u.doomNext()
	}
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// start boots a process on the disk: a fresh node that recovers from what is there.
func (u *run) start() {
	u.epoch++
	u.up, u.tickAt = true, 0
	u.stats.Recoveries++
	u.n = node.New(node.Config{NodeID: "n1", Addr: "n1:7942", AckFlushIntervalNs: AckFlushIntervalNs,
		PartitionSegmentBytesMax: u.o.SegmentBytesMax, OnPartitionReopen: u.onReopen,
		WAL: wal.Config{PreallocBytes: u.o.PreallocBytes}, PartitionPreallocBytes: u.o.PreallocBytes,
		Dispatch: dispatch.Config{OnReroute: u.onReroute}}, u.r.Fork())
	u.poison.Restarted(u.s.Now())
	u.record('o', u.epoch)
	u.n.Open(u.s.Now())
	u.drain()
}

// crash kills the process: ops in flight and unanswered requests are lost with it.
func (u *run) crash() { u.crashWith(u.d.Kill) }

// crashKeepingCache kills the process alone: the kernel keeps the page cache.
func (u *run) crashKeepingCache() { u.crashWith(func() bool { u.d.ProcessCrash(); return true }) }

// crashWith kills the process, the disk's fate decided by kill.
func (u *run) crashWith(kill func() bool) {
	if !u.up {
		return
	}
	u.stats.Crashes++
	u.crashes = append(u.crashes, u.s.Now())
	u.record('c', u.epoch)
	u.up = false
	u.epoch++
	u.loseRequests()
	kill() // a process crash (page cache kept) or a machine crash; the disk counts which
	u.noteCrashDamage()
	u.checkDurable()
	u.checkVisibility()
	u.s.At(u.s.Now()+u.o.RestartNs, event{kind: evRestart})
}

// drain carries out the node's Ready: schedule ops, route responses, arm the timer.
func (u *run) drain() {
	rd := u.n.Ready()
	for _, op := range rd.Ops {
		u.checkRemoval(op)
		u.s.At(u.s.Now()+u.latency(op), event{kind: evOpDone, epoch: u.epoch, op: op})
	}
	for _, resp := range rd.Responses {
		u.onResponse(resp)
	}
	if rd.Failed != nil {
		if invariants.PartitionFailure(rd.Failed) {
			u.violate(fmt.Errorf("poison: the node failed for one partition's failure: %v", rd.Failed))
		}
		if invariants.WALFullFailure(rd.Failed) {
			u.violate(fmt.Errorf("nospace: the node failed for a full device: %v", rd.Failed))
		}
		u.stats.NodeFailures++
		u.record('f')
		u.s.At(u.s.Now()+1, event{kind: evCrash, epoch: u.epoch})
	}
	u.maybeSetup()
	if at, ok := u.n.NextDeadline(); ok && at != u.tickAt {
		u.tickAt = max(at, u.s.Now())
		u.s.At(u.tickAt, event{kind: evTick, epoch: u.epoch})
	}
}

// TicksAtOneInstantMax bounds the ticks the node may ask for at one simulated instant. A
// deadline that Tick does not clear makes the driver tick forever without time moving (in
// the daemon: a timer spinning a core); that is a liveness bug, reported as a violation.
const TicksAtOneInstantMax = 1000

func (u *run) checkTickProgress() {
	if u.s.Now() != u.lastTickNs {
		u.lastTickNs, u.ticksAtLast = u.s.Now(), 0
	}
	u.ticksAtLast++
	if u.ticksAtLast > TicksAtOneInstantMax {
		u.violate(fmt.Errorf("liveness: the node asked for %d ticks at one instant (a deadline Tick never clears)", u.ticksAtLast))
	}
}
