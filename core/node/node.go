package node

import (
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/core/wal"
)

// Config holds a node's settings; zero fields take the components' defaults.
type Config struct {
	NodeID string
	// Addr is the address this node is reached at, sent in its heartbeats (so recorded
	// when it joins the members, GET /v1/cluster/members); empty: no heartbeats, no join.
	Addr string
	// HeartbeatIntervalNs: how often the node heartbeats the metastore leader; default
	// DefaultHeartbeatIntervalNs.
	WAL      wal.Config
	Meta     meta.Config
	Dispatch dispatch.Config
	// PartitionSegmentBytesMax, PartitionPreallocBytes and AckFlushIntervalNs tune every
	// partition.
	PartitionSegmentBytesMax int64
	PartitionPreallocBytes   int64 // plog.Config.PreallocBytes
	AckFlushIntervalNs       int64
	HeartbeatIntervalNs      int64
	// OnWalk, when set, is told when a synchronous produce walks past a dead owner: a
	// message of partition from goes to partition to of incarnation topicID instead (the
	// simulators hold every record found off its partition to such a move).
	OnWalk func(topicID uint64, from, to uint32)
	// OnPartitionReopen, when set, is told when a failed partition is reopened (its
	// machines made anew, recovering from the disk): its leases and the acks not yet
	// durable are gone (poison.go). For the simulators' checks.
	OnPartitionReopen func(topicID uint64, index uint32)
	// OnPartitionMoved, when set, is told when this node takes over a partition a move
	// copied here from member from (move.go): the leases held there ended. For the
	// simulators' checks.
	OnPartitionMoved func(topicID uint64, index uint32, from uint64)
	// OnPartitionCommit, when set, is told of every commit this node made durable in a
	// partition it owns (not a move's copy), under the partition's epoch on its replica.
	// For the simulators' checks (one owner commits per partition epoch).
	OnPartitionCommit func(topicID uint64, index, epoch uint32, base uint64, count int)
	// OnLocalCommit, when set, is told of the entries of every commit of this node's own
	// dispatcher made durable here (no answer crosses the network: the simulators learn
	// from it what a dispatcher holds done).
	OnLocalCommit func(entries []plog.Entry)
	// ProduceLocalPartitions sends a message with neither key nor partition round-robin
	// over the partitions of its topic this node owns, on its replica (every partition
	// when it owns none): its commit then stays on this node, with no crossing to another
	// member. Producers must spread over the members for every partition to fill.
	ProduceLocalPartitions bool
	// NoRebalance turns the metastore controller's move duty off (meta.Config.Rebalance):
	// nothing moves partitions but MovePartition.
	NoRebalance bool
	// RootHash is the bcrypt hash of the root user's password, from the shell; while it
	// is set, a leader whose replica has no root user proposes it (users.go). Empty: the
	// node never makes one (security off, or the simulators).
	RootHash string
}

// component names which machine an op belongs to.
type component uint8

const (
	compWAL component = iota + 1
	compMeta
	compPlog
	compLease
	compReclaim
)

type opRoute struct {
	comp    component
	part    partKey
	innerID uint64
}

// Node is one broker node's core: the ingress WAL, the metastore replica, the
// dispatcher, and the partition logs and leases of the partitions it owns. It is a
// deterministic state machine; see doc.go.
type Node struct {
	cfg  Config
	rand *rng.Rand
	out  Ready

	wal  *wal.Log
	meta *meta.Store
	disp *dispatch.Dispatcher

	walReady, metaReady bool
	walRecovery         *wal.Recovery
	failed              error

	ops      map[uint64]opRoute
	nextOpID uint64
	inflight inflightTable // every operation in flight with a machine or a peer (inflight.go)

	parts    map[partKey]*partition
	partKeys []partKey // sorted: the order of every pass over partitions

	produces     map[uint64]*produceOp // client token -> produce in progress
	syncInFlight int                   // synchronous produces waiting (producesync.go)
	rr           map[string]uint32     // round-robin cursor per topic
	consumes     map[uint64]*consumeOp
	routed       map[routedConsume]uint64 // a peer's routed consume -> its token here
	internalDone []Response               // internal requests' Responses, for their continuations

	catchup         catchUpState // catchup.go
	reclaim         reclaimState // reclaim.go
	peers           peerState    // hello.go
	counts          nodeCounts   // stats.go
	rootRetryAtNs   int64        // bootstrapRoot's next try (users.go)
	nextHeartbeatNs int64
	seenApplied     uint64       // the metastore index topics were synced at
	removal         removalState // this member's own removal (decommission.go)
	moves           moveState    // partition moves, both ends (move.go, moveserve.go)
	marks           marksState   // the members' partition marks (marks.go)
}

// New returns a node that does nothing until Open. rand seeds receipt-handle nonces.
func New(cfg Config, rand *rng.Rand) *Node {
	n := &Node{
		cfg: cfg, rand: rand,
		wal: wal.New(cfg.WAL), meta: meta.New(metaConfig(cfg, rand)),
		ops: map[uint64]opRoute{}, parts: map[partKey]*partition{},
		produces: map[uint64]*produceOp{}, inflight: newInflightTable(),
		rr: map[string]uint32{}, consumes: map[uint64]*consumeOp{},
		routed: map[routedConsume]uint64{},
		peers:  peerState{nonce: map[uint64]uint64{}, requests: map[[3]uint64]int64{}},
		counts: nodeCounts{commitLatency: newHistogram()},
	}
	n.reclaim.Reclaimer = n.newReclaimer()
	return n
}

// metaConfig is the metastore's configuration for this process: its barriers numbered
// from a random base (meta.Config.ReadContextBase) unless the caller chose one.
func metaConfig(nc Config, rand *rng.Rand) meta.Config {
	c := nc.Meta
	c.Rebalance = !nc.NoRebalance
	if c.ReadContextBase == 0 {
		c.ReadContextBase = rand.Uint64() >> 1
	}
	if mutReadCtx {
		c.ReadContextBase = 0
	}
	return c
}

// Ready is the node's output since the last call. Ops may all be carried out at once, in
// any order; Responses answer client requests (by the token the client gave); Failed is
// set once when the node must stop (a failed fsync anywhere): the shell exits and a
// restart recovers from the disk.
type Ready struct {
	Ops       []disk.Op
	Responses []Response
	Messages  []Outbound // to peers, best effort, any order
	Failed    error
}

// Response answers the request submitted with Token. Exactly one of the payload fields
// is meaningful, by the request's kind; Err is nil on success.
type Response struct {
	Token    uint64
	Err      error
	Accepted int
	Messages []Message
	Results  []error
	Topic    Topic
	Topics   []Topic
	NextPage string
	Stats    []PartitionStats
	Members  []MemberInfo
	User     User
	Forget   *ForgetReport
	// Decommission: a decommission's answer (decommission.go).
	Decommission *DecommissionReport
	Moves        []MoveInfo // ListMoves (moveapi.go)
}

// Open starts recovery of the WAL and the metastore. Requests are answered ErrNotReady
// until both are done.
func (n *Node) Open(nowNs int64) {
	n.wal.Open(nowNs)
	n.meta.Open(nowNs)
	n.collect(nowNs)
}

// Ready returns the actions produced since the last call and clears them.
func (n *Node) Ready() Ready {
	r := n.out
	n.out = Ready{}
	return r
}

// Failed returns the reason the node stopped, or nil.
func (n *Node) Failed() error { return n.failed }

// IsReady reports whether the node serves requests, and if not, why.
func (n *Node) IsReady() error {
	switch {
	case n.failed != nil:
		return n.failed
	case !n.walReady:
		return fmt.Errorf("%w: recovering the write-ahead log", ErrNotReady)
	case !n.metaReady:
		return fmt.Errorf("%w: recovering the metastore", ErrNotReady)
	case n.meta.LeaderID() == 0:
		return fmt.Errorf("%w: no metastore leader", ErrNotReady)
	}
	return nil
}

func (n *Node) fail(err error) {
	if n.failed == nil {
		n.failed = err
		n.out.Failed = err
	}
}

// issue renames a component's ops into the node's op id space.
func (n *Node) issue(c component, pk partKey, ops []disk.Op) {
	for _, op := range ops {
		n.nextOpID++
		n.ops[n.nextOpID] = opRoute{comp: c, part: pk, innerID: op.ID}
		op.ID = n.nextOpID
		n.out.Ops = append(n.out.Ops, op)
	}
}

// DiskDone routes a completion to the machine that issued the op.
func (n *Node) DiskDone(nowNs int64, res disk.Result) {
	r, ok := n.ops[res.ID]
	if !ok {
		assert.Failf("node: completion of unknown op %d", res.ID)
	}
	delete(n.ops, res.ID)
	res.ID = r.innerID
	switch r.comp {
	case compWAL:
		n.wal.DiskDone(nowNs, res)
	case compMeta:
		n.meta.DiskDone(nowNs, res)
	case compReclaim:
		n.reclaim.DiskDone(nowNs, res)
	case compPlog, compLease:
		p := n.parts[r.part]
		if p == nil {
			n.onDroppedDone(nowNs) // the partition was dropped (topic deleted): nothing waits on this op
			n.collect(nowNs)
			return
		}
		if r.comp == compPlog {
			p.log.DiskDone(nowNs, res)
		} else {
			p.leases.DiskDone(nowNs, res)
		}
	}
	n.collect(nowNs)
}

// Tick fires every machine's deadlines.
func (n *Node) Tick(nowNs int64) {
	n.wal.Tick(nowNs)
	n.meta.Tick(nowNs)
	n.heartbeat(nowNs)
	n.forgetPeerRequests(nowNs)
	if n.disp != nil {
		n.disp.Tick(nowNs)
	}
	for _, pk := range n.partKeys {
		p := n.parts[pk]
		p.log.Tick(nowNs)
		p.leases.Tick(nowNs)
	}
	n.expireConsumes(nowNs)
	n.expireInFlight(nowNs)
	n.reclaim.Tick(nowNs)
	n.proposeOwnRemoval(nowNs)
	n.collect(nowNs)
}

// NextDeadline is the earliest deadline of any machine or long-poll.
func (n *Node) NextDeadline() (int64, bool) {
	var at int64
	take := func(t int64, ok bool) {
		if ok && (at == 0 || t < at) {
			at = t
		}
	}
	take(n.wal.NextDeadline())
	take(n.meta.NextDeadline())
	take(n.heartbeatDeadline())
	take(n.rootDeadline())
	take(n.catchUpDeadline())
	take(n.reclaim.NextDeadline())
	take(n.reopenDeadline())
	if n.disp != nil {
		take(n.disp.NextDeadline())
	}
	for _, pk := range n.partKeys {
		p := n.parts[pk]
		take(p.log.NextDeadline())
		take(p.leases.NextDeadline())
	}
	take(n.consumeDeadline())
	take(n.moveDeadline())
	take(n.inflight.nextDeadline())
	return at, at != 0
}

// Flush makes the lazily persisted state durable now: the WAL checkpoint and every
// partition's pending acks (clean shutdown). Flushed reports when it is.
func (n *Node) Flush(nowNs int64) {
	n.wal.FlushCheckpoint(nowNs)
	for _, pk := range n.partKeys {
		n.parts[pk].leases.Flush(nowNs)
	}
	n.collect(nowNs)
}

// Flushed reports whether the WAL checkpoint and every ack accepted are durable, or the
// node failed (nothing more will be written).
func (n *Node) Flushed() bool {
	if n.failed != nil {
		return true
	}
	if !n.wal.CheckpointFlushed() {
		return false
	}
	for _, pk := range n.partKeys {
		if !n.parts[pk].leases.Flushed() {
			return false
		}
	}
	return true
}
