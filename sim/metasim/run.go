package metasim

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/internal/raftrand"
	"github.com/narad/narad/invariants"
	"github.com/narad/narad/sim"
	"github.com/narad/narad/sim/sched"
	"github.com/narad/narad/sim/simclock"
	"github.com/narad/narad/sim/simnet"
)

type eventKind uint8

const (
	evOpDone eventKind = iota + 1
	evTick
	evMsg
	evCrash // node < 0: the crash schedule picks a replica
	evRestart
	evClient
	evCut
	evOutage // a forget seed's long outage (forget.go)
)

type event struct {
	kind  eventKind
	node  int
	epoch uint64
	op    disk.Op
	msg   simnet.Delivery[[]byte]
}

// replica is one metastore process on its own disk; epoch ties events to one
// incarnation of the process.
type replica struct {
	id      uint64
	d       *sim.Disk
	s       *meta.Store
	epoch   uint64
	up      bool
	tickAt  int64             // simulated time of the next tick
	clock   simclock.Clock    // the machine's clock: the store sees only its readings
	pending map[uint64]string // proposal token -> topic name, or "" for a join of this replica
}

// Stats summarises a run.
type Stats struct {
	Proposed, Acked, Refused, Lost   uint64
	Crashes, Failures, Leaders       uint64
	AppliedChecks, CutChanges        uint64
	SnapshotsSent                    uint64
	DeadMarks                        uint64 // (member, index) pairs seen dead in an applied state
	Outages, ForgetsProposed         uint64 // forget seeds (forget.go)
	Forgotten, ForgetChecks          uint64
	MovesProposed, MovesApplied      uint64 // move seeds (moves.go)
	EpochChecks                      uint64 // owners checked at an epoch above 0
	HealNs                           int64
	Net                              simnet.Stats
	DiskSyncFails, DiskWritesDamaged uint64
	Disk                             sim.DiskStats // summed over the replicas' disks
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
	trace *sched.Trace
	net   *simnet.Net[[]byte]
	reps  []*replica
	ids   []uint64
	err   error
	stats Stats

	epochs  uint64
	meta    *invariants.MetaHistory // leaders by term, states by applied index
	acked   map[string]bool         // topics a proposal was answered for
	waiting []string                // topics to propose again (refused, timed out, lost)
	joins   []uint64                // members whose join is not answered yet
	joined  map[uint64]bool
	names   uint64
	tokens  uint64
	healing bool

	outage     int                  // the replica of the long outage, -1 before (forget.go)
	forgotten  map[uint64]bool      // ids whose forget was answered applied
	forgetting bool                 // a forget proposal waits for its answer
	epochOwner map[partEpoch]uint64 // move seeds: each partition epoch's owner (moves.go)
}

// AckedFloor is the fewest answered proposals a seed must have: one under it did too
// little work for its checks to mean anything.
const AckedFloor = 20

// Run executes the options' run and reports its trace hash and verdict. etcd raft draws
// its election jitter from crypto/rand.Reader: the run replaces it with a stream from its
// seed, so runs in one process take turns (internal/raftrand).
func Run(o Options) (res Result) {
	r := rng.New(o.Seed)
	raftrand.With(r.Fork(), func() { res = runWith(o, r) })
	return res
}

func runWith(o Options, r *rng.Rand) Result {
	u := &run{o: o, r: r, trace: sched.NewTrace(), net: simnet.New[[]byte](r.Fork(), o.Net),
		meta: invariants.NewMetaHistory(), acked: map[string]bool{},
		joined: map[uint64]bool{}, outage: -1, forgotten: map[uint64]bool{},
		epochOwner: map[partEpoch]uint64{}}
	for i := range o.Nodes {
		u.ids = append(u.ids, uint64(i+1))
		u.joins = append(u.joins, uint64(i+1))
		u.reps = append(u.reps, &replica{id: uint64(i + 1), d: sim.NewDisk(r.Fork(), o.Disk),
			clock: simclock.Draw(o.Seed, i, o.SkewNs, o.DriftPPM)})
	}
	for i := range u.reps {
		u.start(i)
	}
	u.s.At(u.after(o.ClientGapNs), event{kind: evClient})
	if o.CrashGapNs[1] > 0 {
		u.s.At(u.after(o.CrashGapNs), event{kind: evCrash, node: -1})
	}
	if o.CutGapNs[1] > 0 {
		u.s.At(u.after(o.CutGapNs), event{kind: evCut})
	}
	if o.OutageNs > 0 {
		u.s.At(o.OutageAtNs, event{kind: evOutage})
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
	if u.err == nil && (u.stats.Acked < AckedFloor || u.stats.Leaders == 0) {
		u.violate(fmt.Errorf("vacuous: %d proposals answered (floor %d) and %d leaders: the seed proves nothing", u.stats.Acked, AckedFloor, u.stats.Leaders))
	}
	u.stats.Net = u.net.Stats()
	for _, rep := range u.reps {
		ds := rep.d.Stats()
		sim.AddCounters(&u.stats.Disk, ds)
		u.stats.DiskSyncFails += ds.SyncsFailed
		u.stats.DiskWritesDamaged += ds.WritesCorrupted + ds.WritesLost
	}
	return Result{Trace: u.trace.Sum(), Violation: u.err, Stats: u.stats}
}

// nowOf is replica rep's clock now.
func (u *run) nowOf(rep *replica) int64 { return rep.clock.Local(u.s.Now()) }

func (u *run) after(gap [2]int64) int64 { return u.s.Now() + sched.Between(u.r, gap[0], gap[1]) }

func (u *run) record(kind byte, vals ...uint64) { u.trace.Record(u.s.Now(), kind, vals...) }

func (u *run) violate(err error) {
	if u.err == nil {
		u.err = fmt.Errorf("t=%dns: %w", u.s.Now(), err)
	}
}

func (u *run) handle(e event) {
	switch e.kind {
	case evOpDone:
		rep := u.reps[e.node]
		if e.epoch == rep.epoch && rep.up {
			res := disk.Apply(rep.d, e.op)
			u.record('d', uint64(e.node), e.op.ID, uint64(e.op.Kind), uint64(len(res.Data)), boolBit(res.Err != nil))
			rep.s.DiskDone(u.nowOf(rep), res)
			u.drain(e.node)
		}
	case evTick:
		rep := u.reps[e.node]
		if e.epoch == rep.epoch && rep.up && u.s.Now() == rep.tickAt {
			u.record('t', uint64(e.node))
			rep.tickAt = 0
			rep.s.Tick(u.nowOf(rep))
			u.heartbeat(rep)
			u.drain(e.node)
		}
	case evMsg:
		u.deliver(e.msg)
	case evCrash:
		u.onCrashEvent(e)
	case evRestart:
		if !u.reps[e.node].up {
			u.start(e.node)
		}
	case evClient:
		u.clientStep()
		next := u.after(u.o.ClientGapNs)
		if u.healing {
			next = u.s.Now() + HealClientGapNs
		}
		u.s.At(next, event{kind: evClient})
	case evOutage:
		u.startOutage()
	case evCut:
		if !u.healing && !u.inOutage() {
			u.changeCuts()
			u.s.At(u.after(u.o.CutGapNs), event{kind: evCut})
		}
	}
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// start boots replica i's process on its disk: a fresh store that recovers from it.
func (u *run) start(i int) {
	rep := u.reps[i]
	u.epochs++
	rep.epoch, rep.up, rep.tickAt, rep.pending = u.epochs, true, 0, map[uint64]string{}
	rep.s = meta.New(meta.Config{ID: rep.id, Voters: u.ids, SnapshotEveryEntries: u.o.SnapshotEvery, DeadAfterNs: u.o.DeadAfterNs,
		OnApply:         func(index, term uint64) { u.onApply(i, index, term) },
		ReadContextBase: rep.epoch << 32}) // unique per process, as the node's random one
	u.record('o', uint64(i), rep.epoch)
	rep.s.Open(u.nowOf(rep))
	u.drain(i)
}

// crash kills replica i's process and its machine: ops in flight, messages it would have
// sent and unanswered proposals are lost; the disk applies its crash model.
func (u *run) crash(i int) { u.crashFor(i, -1) }

// crashFor is crash with the replica down for downNs (-1: drawn from RestartNs).
func (u *run) crashFor(i int, downNs int64) {
	rep := u.reps[i]
	if !rep.up {
		return
	}
	u.stats.Crashes++
	u.record('c', uint64(i), rep.epoch)
	rep.up = false
	u.epochs++
	rep.epoch = u.epochs
	u.requeue(rep)
	rep.d.Kill() // a process crash (page cache kept) or a machine crash
	at := u.s.Now() + downNs
	if downNs < 0 {
		at = u.after(u.o.RestartNs)
	}
	u.s.At(at, event{kind: evRestart, node: i})
}

func (u *run) onCrashEvent(e event) {
	if e.node >= 0 { // the store failed: restart it (a machine crash, see doc.go of meta)
		if e.epoch == u.reps[e.node].epoch {
			u.crash(e.node)
		}
		return
	}
	if u.healing {
		return
	}
	if !u.inOutage() {
		u.crash(u.r.Intn(len(u.reps)))
	}
	u.s.At(u.after(u.o.CrashGapNs), event{kind: evCrash, node: -1})
}

// drain carries out replica i's Ready: ops to the disk, messages to the network, answers
// to the clients, the next tick; then checks the leader of its term.
func (u *run) drain(i int) {
	rep := u.reps[i]
	rd := rep.s.Ready()
	for _, op := range rd.Ops {
		lat := sched.Latency(u.r, op, u.o.OpLatencyNs, u.o.SyncLatencyNs)
		u.s.At(u.s.Now()+lat, event{kind: evOpDone, node: i, epoch: rep.epoch, op: op})
	}
	for _, d := range rd.Done {
		u.onDone(rep, d)
	}
	for _, m := range rd.Messages {
		u.send(m)
	}
	if rd.Failed != nil {
		u.stats.Failures++
		u.record('f', uint64(i))
		u.s.At(u.s.Now()+1, event{kind: evCrash, node: i, epoch: rep.epoch})
	}
	u.checkLeader(rep)
	if at, ok := rep.s.NextDeadline(); ok && max(rep.clock.Sim(at), u.s.Now()) != rep.tickAt {
		rep.tickAt = max(rep.clock.Sim(at), u.s.Now())
		u.s.At(rep.tickAt, event{kind: evTick, node: i, epoch: rep.epoch})
	}
}

// Network payloads: a kind byte, then the body.
const (
	msgRaft      = 'r' // a raft message in its protobuf wire form
	msgHeartbeat = 'h' // a member's heartbeat to the leader it knows of (no body)
	msgRelay     = 'y' // a heartbeat relayed to the leader: the heartbeating node's id u64
)

// heartbeat sends rep's heartbeat to the leader it knows of, as a node does on its timer
// (a leader hears its own directly); knowing none, to every other initial voter.
func (u *run) heartbeat(rep *replica) {
	switch l := rep.s.LeaderID(); {
	case l == rep.id:
		rep.s.Heartbeat(u.nowOf(rep), rep.id, addrOf(rep.id))
	case l != 0:
		u.sendRaw(rep.id, l, []byte{msgHeartbeat})
	default:
		for _, id := range u.ids {
			if id != rep.id {
				u.sendRaw(rep.id, id, []byte{msgHeartbeat})
			}
		}
	}
}

func (u *run) sendRaw(from, to uint64, body []byte) {
	for _, d := range u.net.Send(u.s.Now(), from, to, body) {
		u.s.At(d.AtNs, event{kind: evMsg, msg: d})
	}
}

// onHeartbeat records a heartbeat as the node layer does (core/node peers.go): its
// own, or one a member relayed for a node outside the configuration; and relays to the
// leader the heartbeat of a node outside the configuration.
func (u *run) onHeartbeat(rep *replica, d simnet.Delivery[[]byte]) {
	now := u.nowOf(rep)
	if d.Msg[0] == msgRelay {
		if from := binary.LittleEndian.Uint64(d.Msg[1:]); rep.s.IsMember(d.From) && !rep.s.InConf(from) {
			rep.s.Heartbeat(now, from, addrOf(from))
		}
		return
	}
	rep.s.Heartbeat(now, d.From, addrOf(d.From))
	if l := rep.s.LeaderID(); l != 0 && l != rep.id && !rep.s.InConf(d.From) {
		u.sendRaw(rep.id, l, binary.LittleEndian.AppendUint64([]byte{msgRelay}, d.From))
	}
}

func addrOf(id uint64) string { return fmt.Sprintf("node-%d:7942", id) }

// send puts a raft message on the network in its wire form, so that every delivery
// (duplicates too) is decoded into its own message.
func (u *run) send(m *raftpb.Message) {
	data, err := proto.Marshal(m)
	if err != nil {
		u.violate(fmt.Errorf("protocol: raft message does not marshal: %v", err))
		return
	}
	data = append([]byte{msgRaft}, data...)
	u.record('s', m.GetFrom(), m.GetTo(), uint64(m.GetType()))
	if m.GetType() == raftpb.MessageType_MsgSnap {
		u.stats.SnapshotsSent++
	}
	for _, d := range u.net.Send(u.s.Now(), m.GetFrom(), m.GetTo(), data) {
		u.s.At(d.AtNs, event{kind: evMsg, msg: d})
	}
}

func (u *run) deliver(d simnet.Delivery[[]byte]) {
	i := int(d.To - 1)
	if !u.net.Arrives(d) || i < 0 || i >= len(u.reps) || !u.reps[i].up {
		return
	}
	if d.Msg[0] == msgHeartbeat || d.Msg[0] == msgRelay {
		u.record('b', d.From, d.To, uint64(d.Msg[0]))
		u.onHeartbeat(u.reps[i], d)
		return
	}
	m := &raftpb.Message{}
	if err := proto.Unmarshal(d.Msg[1:], m); err != nil {
		u.violate(fmt.Errorf("protocol: raft message does not unmarshal: %v", err))
		return
	}
	u.record('m', d.From, d.To, uint64(m.GetType()), boolBit(d.Stale))
	u.reps[i].s.Step(u.nowOf(u.reps[i]), m)
	u.drain(i)
}

// changeCuts draws the next network shape: healed, one node isolated, a pair cut both
// ways, or a one-way cut.
func (u *run) changeCuts() {
	u.stats.CutChanges++
	switch shape, a, b := u.net.Reshape(u.r, u.ids); shape {
	case simnet.ShapeHealed:
		u.record(shape)
	case simnet.ShapeIsolated:
		u.record(shape, a)
	default:
		u.record(shape, a, b)
	}
}
