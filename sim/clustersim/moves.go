package clustersim

import (
	"fmt"
	"slices"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// Partition moves (issue 14): the nodes' metastore controller moves partitions to a
// member that joins (decommission seeds: the spare), away from a draining one, and after
// a leader change when they are uneven (core/meta rebalance_control.go); the nodes copy
// them (core/node move.go). A move keeps every record at its offset, so the checks of
// offsets and bytes (invariants 3, 4 and porcupine's per-partition model) hold across it
// as they are. What changes is who serves: the owner cache moves with the cutover, and a
// lease taken at the source ends with the move (causeMove); acks move with the partition,
// so an acked record is delivered again only after a crash of an owner it had (its
// source among them) inside the ack-flush window.

// cutover is one move a destination took over.
type cutover struct {
	atNs     int64
	from, to uint64
}

// onCutover records node mb taking partition index of topicID over from member from. From
// is 0 when a later process of mb found the cutover applied: the source is then the owner
// the run knew, and nothing is new when that is mb already.
func (u *run) onCutover(mb *member, topicID uint64, index uint32, from uint64) {
	k := moveKey{topicID, index}
	if o, ok := u.owners[k]; from == 0 && ok {
		if o == mb.id {
			return
		}
		from = o
	}
	u.stats.Cutovers++
	u.cutovers[k] = append(u.cutovers[k], cutover{atNs: u.s.Now(), from: from, to: mb.id})
	u.owners[k] = mb.id
	u.record('v', topicID, uint64(index), from, mb.id)
}

// movedBetween reports whether k's partition was taken over by another member in
// [fromNs, toNs].
func (u *run) movedBetween(k recKey, fromNs, toNs int64) bool {
	for _, c := range u.cutovers[moveKey{k.topicID, k.part}] {
		if c.atNs >= fromNs && c.atNs <= toNs {
			return true
		}
	}
	return false
}

// pastOwners lists owner and every member k's partition was moved away from.
func (u *run) pastOwners(k recKey, owner uint64) []uint64 {
	out := []uint64{owner}
	for _, c := range u.cutovers[moveKey{k.topicID, k.part}] {
		if c.from != 0 && !slices.Contains(out, c.from) { // 0: a source not known
			out = append(out, c.from)
		}
	}
	return out
}

// epochKey names one epoch of one partition.
type epochKey struct {
	topicID uint64
	part    uint32
	epoch   uint32
}

// onPartitionCommit holds a commit node mb made durable to check "moves": one owner
// commits per partition epoch. A move's destination commits under the next epoch only
// (the cutover's); its source, frozen, commits nothing more under the old one, so two
// nodes committing under one epoch is a cutover without its fence (or a stale owner).
func (u *run) onPartitionCommit(mb *member, topicID uint64, index, epoch uint32) {
	k := epochKey{topicID, index, epoch}
	u.stats.EpochChecks++
	if o, ok := u.epochOwner[k]; ok && o != mb.id {
		u.violate(fmt.Errorf("moves: partition %d/%d committed under epoch %d by node %d and by node %d",
			topicID, index, epoch, o, mb.id))
		return
	}
	u.epochOwner[k] = mb.id
}

// MovesBoundNs bounds the wait after the heal for every move to end (done or aborted):
// a copy of what the faults left (seconds of simulated disk), the pre-copy bound, and
// the controller's follow-up moves, with margin.
const MovesBoundNs = 60_000_000_000

// awaitMovesDone runs the healed cluster until no up replica holds a move in progress,
// for at most MovesBoundNs ("moves": a move that never ends leaves its partition frozen
// or its copy half made).
func (u *run) awaitMovesDone() {
	if u.err != nil {
		return
	}
	left := func() ([]string, bool) {
		var out []string
		for _, mb := range u.members {
			if !mb.up {
				continue
			}
			for _, mv := range mb.n.Moves() {
				out = append(out, fmt.Sprintf("n%d:%s/%d %d->%d %s", mb.id, mv.Topic, mv.Partition, mv.From, mv.To, mv.State))
			}
		}
		return out, true
	}
	if moves, _ := left(); len(moves) > 0 {
		u.stats.MoveChecks += uint64(len(moves)) // moves the heal found in progress, awaited
	}
	if moves := invariants.AwaitNone(u.s.Now, u.healStep, left, MovesBoundNs); len(moves) > 0 {
		u.violate(fmt.Errorf("moves: %d moves still in progress %d s after the heal: %v", len(moves),
			MovesBoundNs/1_000_000_000, moves[:min(len(moves), 5)]))
	}
}

// moveStep is a move seed's client (Options.MoveGapNs): while the faults go on, it asks
// an up node drawn at random to move a partition of the main topic to a member drawn at
// random (the metastore refuses what it must: the owner itself, a dead or draining
// destination, a partition that moves already), or, one time in four, to abort a move
// its replica shows in progress. The controller's own moves run beside these.
func (u *run) moveStep() {
	if u.healing {
		return
	}
	defer u.s.At(u.after(u.o.MoveGapNs), event{kind: evMove})
	via, ok := u.upNode()
	if !ok || u.topicID == 0 {
		return
	}
	n := u.members[via].n
	if mvs := n.Moves(); len(mvs) > 0 && u.r.Intn(4) == 0 {
		mv := mvs[u.r.Intn(len(mvs))]
		u.stats.AbortsAsked++
		u.submitReq(via, request{kind: reqMove, client: -1},
			func(n *node.Node, now int64, tok uint64) { n.AbortMove(now, tok, mv.Topic, mv.Partition) })
		return
	}
	part := uint32(u.r.Intn(int(u.o.Partitions)))
	to := u.ids[u.r.Intn(len(u.ids))]
	u.stats.MovesAsked++
	u.submitReq(via, request{kind: reqMove, client: -1},
		func(n *node.Node, now int64, tok uint64) { n.MovePartition(now, tok, topic, part, to) })
}

// countMoves adds a node process's move counters to the run's (at its end).
func (u *run) countMoves(mb *member) { u.stats.MovesStarted += mb.n.MoveStats().Started }

// onMoveAnswer takes a move seed's answer: any outcome is allowed (the checks watch what
// the moves do, not whether one was taken).
func (u *run) onMoveAnswer(node.Response) {}
