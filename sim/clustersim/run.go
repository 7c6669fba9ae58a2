package clustersim

import (
	"fmt"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/internal/raftrand"
	"github.com/narad/narad/invariants"
	"github.com/narad/narad/io/auth"
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
	evCrash // node < 0: the crash schedule picks one
	evRestart
	evClient
	evCut
	evOutage
	evChurn
	evSendFailed // a send of node's failed at the sender: msg is what it sent
	evPeerReset  // node's connection to peer ended
	evStep
	evLearnTopic   // ask again for the main topic's id
	evUser         // the admin's next change of a user (users.go)
	evGiveUp       // a producer's wait for the produce epoch ends (clients.go)
	evForget       // a forget seed looks whether the outage's node is dead yet (forget.go)
	evDecommission // a decommission seed starts or decommissions its spare (decommission.go)
	evCancel       // and cancels that once
	evMove         // a move seed moves a partition by hand, or aborts a move (moves.go)
	evPeerIdle     // node, down since epoch, is past its peers' idle timeout (peerIdleNs)
)

type event struct {
	kind   eventKind
	node   int
	epoch  uint64
	client int
	op     disk.Op
	msg    simnet.Delivery[[]byte]
	peer   uint64
}

// member is one node process on its own disk; epoch ties events to one incarnation.
type member struct {
	id      uint64
	d       *sim.Disk
	n       *node.Node
	epoch   uint64
	up      bool
	tickAt  int64 // simulated time
	clock   simclock.Clock
	pending map[uint64]request
	// ownersSeen: the main topic's owners on this replica at its last apply, in a forget
	// seed until the forget applies (forget.go forgetApplied).
	ownersSeen []uint64
	// drainOwned: the partitions this replica showed the draining spare owning at its last
	// look (decommission.go), -1 when it did not show it draining.
	drainOwned int
	// The HTTP layer's view of the process's replica (Options.Users, users.go).
	auth         *auth.Authenticator
	users        map[string]meta.User
	owners       map[string]string
	usersVersion uint64
	// Readiness (readiness.go): the applied index the process must reach before it may
	// answer ready, whether it did, and whether it served below it before.
	readyFloor          uint64
	ready, servedBehind bool
	// Failed partition ops and reopens on this member's disk (poison.go).
	poison    *invariants.Poison
	fullSince int64 // when its device was first seen full (invariants.OperatorFreesFull)
}

// Stats summarise a run.
type Stats struct {
	Produced, Acked, Refused, Ambiguous uint64
	AckedMain                           uint64 // answered 202 for the main topic
	Synchronous                         uint64 // produced through ProduceSync
	GaveUp                              uint64 // produces a producer stopped waiting for (clients.go)
	Delivered, Duplicates               uint64
	DupCauses                           map[string]uint64 // duplicates by cause (leases.go)
	Crashes, Failures, Leaders          uint64
	Outages, Splits, ClockSteps         uint64
	SkewedNodes                         uint64
	Rerouted, Discarded, Walks          uint64 // summed over node processes
	Checks                              uint64 // durable image checks
	ChurnOps                            uint64 // deletes and creates of the churn topic
	// Access (users.go): the admin's user changes sent and answered done; requests the
	// gate refused (401, 429, 403, 503 before any user) and checked; routed requests
	// made for a user that owners served and refused (403).
	UserOps, UserChanges                                            uint64
	AuthUnauthorized, AuthThrottled, AuthForbidden, AuthNotReady    uint64
	GateChecks, OwnerChecks, OwnerForbidden                         uint64
	RerouteChecks                                                   uint64 // reroutes held to a dead owner (model.go)
	ReadyChecks, ReadyBehind                                        uint64 // first ready answers checked, of which after serving behind (readiness.go)
	ReclaimChecks                                                   uint64 // directories removed under a partition root, checked (reclaim.go)
	PartitionReopens                                                uint64 // failed partitions reopened, each held to a failed op (poison.go)
	Cutovers, EpochChecks, MoveChecks                               uint64 // partition moves taken over, commits held to their epoch's owner, moves awaited after the heal (moves.go)
	MovesAsked, AbortsAsked, MovesStarted                           uint64 // a move seed's requests, and copies the nodes began (moves.go)
	Promoted                                                        uint64 // learners the healed cluster made voters (voters.go)
	ForgetsProposed, Forgotten, GivenUp, OwedAgain                  uint64 // forget seeds (forget.go)
	DecommissionsProposed, Removed, DecommissionChecks, DrainChecks uint64 // decommission seeds
	Cancels                                                         uint64 // and cancels that took
	NoSpaceRefused                                                  uint64 // produces refused for a full WAL device (507)
	CutChanges                                                      uint64
	Replays, PinnedConsumes                                         uint64
	// What the checkers did: deliveries held to their produce (invariants 3 and 8), to
	// their record's previous lease (9 and 10), ack answers checked (9), replays checked,
	// high watermarks read, remote commits checked, and linearizability operations.
	PlaceChecks, LeaseChecks, AckChecks, ReplayChecks, WatermarkReads, CommitChecks uint64
	LinOps                                                                          uint64
	HealNs                                                                          int64
	FaultNs                                                                         int64 // simulated time the fault phase ran
	Net                                                                             simnet.Stats
	Disk                                                                            sim.DiskStats // summed over the nodes
}

// Result is the outcome of one run.
type Result struct {
	Trace     string
	Violation error
	Stats     Stats
}

type run struct {
	o       Options
	r       *rng.Rand
	s       sched.Scheduler[event]
	trace   *sched.Trace
	net     *simnet.Net[[]byte]
	members []*member
	ids     []uint64
	err     error
	stats   Stats

	epochs      uint64
	meta        *invariants.MetaHistory // leaders by term, states by applied index (invariant 6)
	appliedMax  uint64                  // the highest metastore index any replica applied
	ready       bool                    // the topic exists, with owners over every member
	healing     bool
	outageUntil int64 // the long outage's end
	outageNode  int   // the long outage's node, -1 before it (forget.go)
	// forget seeds (forget.go): the member forgotten (0: none), a forget in flight, and
	// the partitions it reassigned.
	forgotten      uint64
	decom          decommissionState // decommission seeds (decommission.go)
	forgetPending  bool              // a forget request waits for its answer
	forgetProposed bool              // a forget was proposed (its outcome may be open: forgetOpen)
	reassigned     map[moveKey]reassignment
	cutovers       map[moveKey][]cutover // partition moves done (moves.go)
	epochOwner     map[epochKey]uint64   // the node that committed under each partition epoch
	instant        int64                 // the simulated time of the last event, and how many events ran at it
	atInstant      int
	tokens         uint64
	m              model
	parts          *invariants.PartitionHistory
	commits        commitTracker
	churnLive      bool // the churn topic exists, as the last answer said
	churn          incarnations
	topicID        uint64 // the main topic's id, once known
	readyAtNs      int64
	moves          *invariants.Moves    // recorded reroutes and walks
	reroutes       [][]reroute          // per member: its dispatchers' reroutes (leases.go)
	crashes        [][]int64            // per member: when its process died, ascending
	crashDamage    []map[string]uint64  // per member: its disk's damage counts per directory at its last crash (leases.go)
	owners         map[moveKey]uint64   // (incarnation, partition) -> owner, once learnt
	ackArrivals    map[ackArrival]int64 // the latest arrival of a routed ack (acklate.go)
	steps          []clockStep          // every clock step, in time order
	visibilityNs   int64                // the topics' visibility timeout
	acc            accessState          // users (Options.Users)
	waiting        map[int]uint64       // per producer: the token of the produce it waits for
}

// ackFlushIntervalNs is the nodes' ack flush interval (node.Config.AckFlushIntervalNs).
const ackFlushIntervalNs = 5_000_000

const topic = "t"

// Run executes the options' run (raft's jitter from the seed, see internal/raftrand).
func Run(o Options) (res Result) {
	r := rng.New(o.Seed)
	raftrand.With(r.Fork(), func() { res = runWith(o, r) })
	return res
}

func runWith(o Options, r *rng.Rand) Result {
	u := &run{o: o, r: r, trace: sched.NewTrace(), net: simnet.New[[]byte](r.Fork(), o.Net),
		meta: invariants.NewMetaHistory(), m: newModel(), parts: invariants.NewPartitionHistory(), commits: newCommitTracker(),
		churn: newIncarnations(), waiting: map[int]uint64{}, moves: invariants.NewMoves(), owners: map[moveKey]uint64{}, ackArrivals: map[ackArrival]int64{},
		outageNode: -1, reassigned: map[moveKey]reassignment{}, cutovers: map[moveKey][]cutover{},
		epochOwner: map[epochKey]uint64{}, visibilityNs: o.VisibilityMs * 1_000_000}
	for i := range o.Nodes + o.Joiners {
		u.ids = append(u.ids, uint64(i+1))
		u.members = append(u.members, &member{id: uint64(i + 1), d: sim.NewDisk(r.Fork(), o.Disk), clock: o.clock(i), poison: invariants.NewPoison(), drainOwned: -1})
		if u.members[i].clock != (simclock.Clock{}) {
			u.stats.SkewedNodes++
		}
	}
	if o.Users {
		u.initUsers()
	}
	u.crashes = make([][]int64, len(u.members))
	u.crashDamage = make([]map[string]uint64, len(u.members))
	u.reroutes = make([][]reroute, len(u.members))
	for i := range u.members {
		if i != u.spare() { // it starts once the main topic exists (decommission.go)
			u.start(i)
		}
	}
	if o.Spare {
		u.s.At(decommissionPollNs, event{kind: evDecommission})
	}
	if o.MoveGapNs[1] > 0 {
		u.s.At(u.after(o.MoveGapNs), event{kind: evMove})
	}
	for c := range o.Producers + o.Consumers + 1 { // and the stats client
		u.s.At(u.think(), event{kind: evClient, client: c})
	}
	for step := 0; u.stepsLeft(step) && u.err == nil; step++ {
		e, ok := u.s.Next()
		if !ok {
			break
		}
		u.step(e)
		if step%checkEvery == 0 {
			u.checkImages()
		}
	}
	u.stats.FaultNs = u.s.Now()
	if u.err == nil {
		u.heal()
	}
	u.checkNotVacuous()
	for _, mb := range u.members {
		if mb.up {
			u.countDispatch(mb)
		}
	}
	u.stats.Net = u.net.Stats()
	u.sumDiskStats()
	return Result{Trace: u.trace.Sum(), Violation: u.err, Stats: u.stats}
}

func (u *run) after(gap [2]int64) int64 { return u.s.Now() + sched.Between(u.r, gap[0], gap[1]) }

func (u *run) think() int64 { return u.s.Now() + sched.Between(u.r, 0, u.o.ThinkMaxNs) }

func (u *run) record(kind byte, vals ...uint64) { u.trace.Record(u.s.Now(), kind, vals...) }

func (u *run) violate(err error) {
	if u.err == nil {
		u.err = fmt.Errorf("t=%dns: %w", u.s.Now(), err)
	}
}

// sameInstantMax bounds the events handled without the simulated clock moving: past it
// something loops at one instant (a livelock), which is a liveness violation.
const sameInstantMax = 1_000_000

// step handles e and watches that simulated time keeps moving.
func (u *run) step(e event) {
	if now := u.s.Now(); now != u.instant {
		u.instant, u.atInstant = now, 0
	}
	if u.atInstant++; u.atInstant > sameInstantMax {
		u.violate(fmt.Errorf("liveness: %d events at one instant (a livelock)", sameInstantMax))
		return
	}
	u.handle(e)
}

func (u *run) handle(e event) {
	switch e.kind {
	case evOpDone:
		mb := u.members[e.node]
		if e.epoch == mb.epoch && mb.up {
			res := disk.Apply(mb.d, e.op)
			mb.poison.OpDone(u.s.Now(), e.op.Name, res.Err)
			mb.fullSince = invariants.OperatorFreesFull(mb.d, mb.fullSince, u.s.Now())
			u.record('d', uint64(e.node), e.op.ID, uint64(len(res.Data)))
			mb.n.DiskDone(u.nowOf(mb), res)
			u.drain(e.node)
		}
	case evTick:
		mb := u.members[e.node]
		if e.epoch == mb.epoch && mb.up && u.s.Now() == mb.tickAt {
			mb.tickAt = 0
			mb.n.Tick(u.nowOf(mb))
			u.drain(e.node)
		}
	case evMsg:
		u.deliver(e.msg)
	case evSendFailed, evPeerReset:
		u.tellSender(e)
	case evCrash:
		u.onCrashEvent(e)
	case evPeerIdle:
		u.peersIdle(e)
	case evRestart:
		switch {
		case u.isGoneNode(e.node): // given up or removed: never back
		case u.forgetOpen() && e.node == u.outageNode: // wait for the forget's outcome
			u.s.At(u.s.Now()+forgetPollNs, e)
		case !u.members[e.node].up:
			u.start(e.node)
		}
	case evClient:
		u.clientStep(e.client)
	case evOutage:
		u.outage()
	case evLearnTopic:
		u.learnTopicID(nil)
	case evChurn:
		u.churnStep()
	case evUser:
		u.userStep(e.epoch)
	case evGiveUp:
		u.giveUp(e.client, e.epoch)
	case evForget:
		u.forgetStep()
	case evDecommission:
		u.decommissionStep()
	case evCancel:
		u.askCancel()
	case evMove:
		u.moveStep()
	case evStep:
		u.clockStep()
	case evCut:
		if !u.healing && u.s.Now() >= u.outageUntil {
			u.changeCuts()
		}
		if !u.healing {
			u.s.At(u.after(u.o.CutGapNs), event{kind: evCut})
		}
	}
}

// outage crashes a node (not the spare) for the long outage, and heals the network for it
// (no cuts meanwhile: the others keep a working quorum).
func (u *run) outage() {
	if u.healing {
		return
	}
	u.stats.Outages++
	i := u.r.Intn(len(u.members) - max(0, min(1, u.spare()+1))) // not the spare
	u.outageNode = i
	u.crashFor(i, u.o.OutageNs)
	if u.o.Forget {
		u.s.At(u.s.Now()+u.o.DeadAfterNs, event{kind: evForget})
	}
	u.outageUntil = u.s.Now() + u.o.OutageNs
	u.net.Heal()
}

// start boots node i's process on its disk.
func (u *run) start(i int) {
	mb := u.members[i]
	u.epochs++
	mb.epoch, mb.up, mb.tickAt, mb.pending = u.epochs, true, 0, map[uint64]request{}
	voters := u.ids[:u.o.Nodes] // the -peers a node is started with
	if i == u.spare() {         // started later: told of every member (the first may be forgotten)
		voters = u.ids[:i]
	}
	mb.n = node.New(node.Config{NodeID: fmt.Sprintf("n%d", mb.id), Addr: fmt.Sprintf("n%d:7942", mb.id),
		Meta: meta.Config{ID: mb.id, Voters: voters, DeadAfterNs: u.o.DeadAfterNs,
			OnApply: func(index, term uint64) { u.onApply(mb, index, term) }},
		Dispatch: dispatch.Config{CommitTimeoutNs: u.o.CommitTimeoutNs,
			OnReroute:      func(k dispatch.Key, to uint32, _ int) { u.onReroute(mb, k, to) },
			OnCommitFailed: func(_ dispatch.Key, recs []wal.Record) { u.onCommitFailed(recs) }},
		ProduceLocalPartitions: u.o.LocalPartitions,
		OnWalk:                 func(topicID uint64, from, to uint32) { u.onMove(topicID, from, to, true) },
		OnPartitionReopen:      func(topicID uint64, index uint32) { u.onReopen(mb, topicID, index) },
		WAL:                    wal.Config{PreallocBytes: u.o.PreallocBytes},
		PartitionPreallocBytes: u.o.PreallocBytes,
		OnPartitionMoved:       func(topicID uint64, index uint32, from uint64) { u.onCutover(mb, topicID, index, from) },
		OnPartitionCommit: func(topicID uint64, index, epoch uint32, _ uint64, _ int) {
			u.onPartitionCommit(mb, topicID, index, epoch)
		},
		OnLocalCommit:       func(es []plog.Entry) { u.onLocalCommit(mb, es) },
		HeartbeatIntervalNs: min(500_000_000, u.o.DeadAfterNs/4),
		AckFlushIntervalNs:  ackFlushIntervalNs}, u.r.Fork())
	if u.o.Users {
		mb.auth, mb.users = u.newAuthenticator(mb), nil
	}
	u.record('o', uint64(i), mb.epoch)
	mb.poison.Restarted(u.s.Now())
	u.noteStart(mb)
	for _, id := range u.ids { // a new process: new connections
		if id != mb.id {
			u.resetLink(mb.id, id, false)
		}
	}
	mb.n.Open(u.nowOf(mb))
	u.drain(i)
}

// crash kills node i's process and machine: ops in flight, messages it had not sent and
// unanswered requests are lost; the disk applies its crash model. It restarts after
// RestartNs.
func (u *run) crash(i int) { u.crashFor(i, sched.Between(u.r, u.o.RestartNs[0], u.o.RestartNs[1])) }

// crashFor crashes node i (if up) and restarts it downNs later.
func (u *run) crashFor(i int, downNs int64) {
	mb := u.members[i]
	if !mb.up {
		return
	}
	u.stats.Crashes++
	u.crashes[i] = append(u.crashes[i], u.s.Now())
	u.record('c', uint64(i), mb.epoch)
	u.countDispatch(mb)
	mb.up = false
	u.epochs++
	mb.epoch = u.epochs
	u.loseRequests(mb)
	mb.d.Kill() // a process crash (page cache kept) or a machine crash; the disk counts which
	u.crashDamage[i] = mb.d.Damages()
	u.checkImages()
	u.s.At(u.s.Now()+downNs, event{kind: evRestart, node: i})
	u.s.At(u.s.Now()+peerIdleNs, event{kind: evPeerIdle, node: i, epoch: mb.epoch})
}

func (u *run) onCrashEvent(e event) {
	if e.node >= 0 {
		if e.epoch == u.members[e.node].epoch {
			u.crash(e.node)
		}
		return
	}
	if u.healing {
		return
	}
	// No second node down during the outage: a quorum stays. And none while no up node
	// follows an up metastore leader: crashes every few hundred ms in a 3-node cluster can
	// otherwise keep raft from ever electing one, and the seed exercises nothing (cluster
	// seeds 1240, 1819 and 2006 answered no produce at all).
	if u.s.Now() >= u.outageUntil && u.leaderUp() {
		u.crash(u.r.Intn(len(u.members)))
	}
	u.s.At(u.after(u.o.CrashGapNs), event{kind: evCrash, node: -1})
}

// leaderUp reports whether some up node follows a metastore leader that is up.
func (u *run) leaderUp() bool {
	for _, mb := range u.members {
		if !mb.up {
			continue
		}
		if l, _ := mb.n.MetastoreLeader(); l != 0 && u.members[l-1].up {
			return true
		}
	}
	return false
}

// drain carries out node i's Ready and checks the metastore leader of its term.
func (u *run) drain(i int) {
	mb := u.members[i]
	rd := mb.n.Ready()
	for _, op := range rd.Ops {
		u.checkRemoval(mb, op)
		lat := sched.Latency(u.r, op, u.o.OpLatencyNs, u.o.SyncLatencyNs)
		u.s.At(u.s.Now()+lat, event{kind: evOpDone, node: i, epoch: mb.epoch, op: op})
	}
	for _, out := range rd.Messages {
		u.commitSent(mb, out.To, out.Body)
		u.accessAnswered(mb, out.To, out.Body)
		ds, failed := u.net.Transmit(u.s.Now(), mb.id, out.To, out.Body)
		if failed { // the shell tells the node once the step is over (io/nodeshell)
			u.s.At(u.s.Now(), event{kind: evSendFailed, node: i, epoch: mb.epoch,
				msg: simnet.Delivery[[]byte]{From: mb.id, To: out.To, Msg: out.Body}})
		}
		for _, d := range ds {
			u.s.At(d.AtNs, event{kind: evMsg, msg: d})
		}
	}
	for _, resp := range rd.Responses {
		u.onResponse(mb, resp)
	}
	if rd.Failed != nil {
		u.checkNodeFailure(mb, rd.Failed)
		u.onNodeStopped(i, rd.Failed)
		u.stats.Failures++
		u.record('f', uint64(i))
		u.s.At(u.s.Now()+1, event{kind: evCrash, node: i, epoch: mb.epoch})
	}
	u.checkLeader(mb)
	u.checkReadiness(mb)
	if at, ok := mb.n.NextDeadline(); ok && max(mb.clock.Sim(at), u.s.Now()) != mb.tickAt {
		mb.tickAt = max(mb.clock.Sim(at), u.s.Now())
		u.s.At(mb.tickAt, event{kind: evTick, node: i, epoch: mb.epoch})
	}
}

func (u *run) deliver(d simnet.Delivery[[]byte]) {
	i := int(d.To - 1)
	if !u.net.Arrives(d) || i < 0 || i >= len(u.members) || !u.members[i].up {
		return
	}
	u.record('m', d.From, d.To, uint64(len(d.Msg)))
	u.commitAnswered(u.members[i], d.Msg)
	u.commitDelivered(u.members[i], d.From, d.Msg)
	u.commitHello(u.members[i], d.From, d.Msg)
	u.accessArrived(u.members[i], d.From, d.Msg)
	u.ackArrived(d.Msg)
	u.members[i].n.Receive(u.nowOf(u.members[i]), d.From, d.Msg)
	u.drain(i)
}

// onApply is invariant 6's "every replica applies the same sequence": every replica
// at the same applied index has the same term there and the same state.
func (u *run) onApply(mb *member, index, term uint64) {
	u.appliedMax = max(u.appliedMax, index)
	u.forgetApplied(mb)
	if err := u.meta.Applied(mb.id, index, term, mb.n.MetastoreDigest()); err != nil {
		u.violate(fmt.Errorf("invariant 6: %w", err))
	}
}

// checkLeader: at most one metastore leader per term (invariant 6).
func (u *run) checkLeader(mb *member) {
	if !mb.up {
		return
	}
	leader, term := mb.n.MetastoreLeader()
	if leader != mb.id {
		return
	}
	isNew, err := u.meta.Leader(term, mb.id)
	if err != nil {
		u.violate(fmt.Errorf("invariant 6: %w", err))
	}
	if isNew {
		u.stats.Leaders++
	}
}

// changeCuts draws the next network shape: healed, a node isolated, a pair cut both
// ways, a one-way cut, or (five nodes or more) a 2|3 split.
func (u *run) changeCuts() {
	u.stats.CutChanges++
	shape, a, b := u.net.Reshape(u.r, u.ids)
	if shape == simnet.ShapeSplit {
		u.stats.Splits++
	}
	u.record('x', a, b)
}

// startFaults starts the faults that need a cluster at work, once the main topic
// exists: crashes, cuts, the long outage, the churn and clock steps. (Before it, a crash
// or a cut could keep a member from being listed alive, and the topic from being made.)
func (u *run) startFaults() {
	if u.o.CrashGapNs[1] > 0 {
		u.s.At(u.after(u.o.CrashGapNs), event{kind: evCrash, node: -1})
	}
	if u.o.CutGapNs[1] > 0 {
		u.s.At(u.after(u.o.CutGapNs), event{kind: evCut})
	}
	if u.o.OutageNs > 0 {
		u.s.At(u.s.Now()+u.o.OutageAtNs, event{kind: evOutage})
	}
	if u.o.ChurnGapNs[1] > 0 {
		u.s.At(u.after(u.o.ChurnGapNs), event{kind: evChurn})
	}
	if u.o.StepGapNs[1] > 0 {
		u.s.At(u.after(u.o.StepGapNs), event{kind: evStep})
	}
	if u.o.Users {
		u.atUserStep(u.s.Now())
	}
}

// sumDiskStats adds up the nodes' disk counters.
func (u *run) sumDiskStats() {
	var t sim.DiskStats
	for _, mb := range u.members {
		d := mb.d.Stats()
		t.SyncsFailed += d.SyncsFailed
		t.WritesCorrupted += d.WritesCorrupted
		t.WritesLost += d.WritesLost
		t.ReadErrors += d.ReadErrors
		t.ReadsCorrupted += d.ReadsCorrupted
		t.NoSpaceFull += d.NoSpaceFull
		t.NoSpaceInjected += d.NoSpaceInjected
		t.PagesTorn += d.PagesTorn
		t.PagesDropped += d.PagesDropped
		t.SectorsGarbage += d.SectorsGarbage
		t.DirOpsLost += d.DirOpsLost
		t.Crashes += d.Crashes
	}
	u.stats.Disk = t
}

// stepsLeft reports whether the fault phase goes on after step events: Options.Steps of
// them, and up to stepsStretch times as many while the run is below a work floor
// (vacuous.go): fewer messages of the main topic answered 202, or fewer deliveries. A
// schedule that kept the cluster from serving so far, its clients burning events on
// refusals, would otherwise end with nothing checked (cluster seed 220, whose users were
// not yet made when its budget ran out; 3764, which had 23 messages answered but 18
// deliveries, a forget giving up some). A run that did work by its budget ends there.
func (u *run) stepsLeft(step int) bool {
	thin := u.stats.AckedMain < ackedFloor || u.stats.Delivered < deliveredFloor
	return step < u.o.Steps || thin && step < stepsStretch*u.o.Steps
}

// stepsStretch bounds how far stepsLeft stretches a fault phase that did no work.
const stepsStretch = 4

// owner is the member owning a partition of an incarnation, asked of a node that is up
// (kept until a move gives the partition to another member: onCutover).
func (u *run) owner(topicID uint64, part uint32) (uint64, bool) {
	k := moveKey{topicID, part}
	if o, ok := u.owners[k]; ok {
		return o, true
	}
	for _, mb := range u.members {
		if !mb.up {
			continue
		}
		if o, ok := mb.n.PartitionOwner(topicID, part); ok {
			u.owners[k] = o
			return o, true
		}
	}
	return 0, false
}

// countDispatch adds a node process's dispatcher counters to the run's (at its end).
func (u *run) countDispatch(mb *member) {
	d := mb.n.Stats().Dispatch
	u.stats.Rerouted += d.Rerouted
	u.stats.Discarded += d.Discarded
	u.countMoves(mb)
}
