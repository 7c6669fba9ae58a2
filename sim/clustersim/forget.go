package clustersim

import (
	"errors"
	"maps"
	"strings"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// Forget seeds (Options.Forget, in some seeds with the long outage): once the outage's
// node is marked dead, a client forgets it (node.ForgetMember), and it never comes back
// (the forgotten node's return is TestForgetDeadMember's, in core/node). The forget
// gives up what only that node held: the messages answered 202 that are, at the answer,
// in no partition log of a live node and either in no live node's WAL or committed at
// the forgotten node (a dispatcher that saw its commit answered OK never sends it
// again). Those leave invariants 2 and 11, until a commit carries one again (a process
// that replays its WAL after a crash sends what its checkpoint did not cover): then it is
// owed again (oweAgain); every other message answered 202 must still
// be delivered after the heal, the reassigned partitions' new records included. The
// reassigned partitions start under a new epoch whose offsets begin past every old one,
// so invariants 4 and 8 and linearizability hold across the forget unchanged; the
// records of the old epoch keep their owner (the forgotten node) for the lease checks.

// forgetPollNs: how often a forget seed looks whether the outage's node is dead yet.
const forgetPollNs = 200_000_000

// reassignment is a partition a forget gave to another member: its records below base
// were the forgotten node's.
type reassignment struct {
	from uint64
	base uint64
}

// forgetStep proposes the forget of the outage's node once some up node's replica marks
// it dead, while it is down and nothing was forgotten yet, and again after an answer
// that leaves the outcome open; it polls until the forget is settled. Once proposed, the
// node is not restarted until the forget is settled (forgetOpen): a forget applied while
// it is up would make it stop, its WAL with it, after the model counted on that WAL.
func (u *run) forgetStep() {
	i := u.outageNode
	if u.forgotten != 0 || i < 0 || u.members[i].up || (u.healing && !u.forgetProposed) {
		return
	}
	id := u.members[i].id
	if via, ok := u.upNode(); ok && !u.forgetPending {
		switch {
		case u.members[via].n.MemberForgotten(id): // an earlier, unanswered forget applied
			u.onForgetDone(id, u.reassignedOn(u.members[via], id))
			return
		case u.members[via].n.MemberDead(id):
			u.forgetPending, u.forgetProposed = true, true
			u.stats.ForgetsProposed++
			u.submitReq(via, request{kind: reqForget, client: -1},
				func(n *node.Node, now int64, tok uint64) { n.ForgetMember(now, tok, id, false) })
		}
	}
	u.s.At(u.s.Now()+forgetPollNs, event{kind: evForget})
}

// forgetApplied notes the forget done as soon as a replica applies it, whatever its
// answer: the model must know the reassigned partitions' owners before their new owners
// commit or serve under the new epoch. A forget whose answer was late (a forward that
// outlives the apply, up to ForwardTimeoutNs) left the model with the old owner while the
// new one served and reopened the partition (cluster seed 2119: a redelivery its reopen
// explains, blamed on the old owner). The partitions it reassigned are those this replica
// showed the forgotten node owning at its apply before (cluster seed 240: the model's own
// owners, stale after moves, missed one, whose records the forget lost).
func (u *run) forgetApplied(mb *member) {
	if !u.o.Forget || u.forgotten != 0 || u.outageNode < 0 {
		return
	}
	id := u.members[u.outageNode].id
	var owners []uint64
	for p := range uint32(u.o.Partitions) {
		if o, ok := mb.n.PartitionOwner(u.topicID, p); ok {
			owners = append(owners, o)
		}
	}
	if !mb.n.MemberForgotten(id) || !u.forgetProposed {
		mb.ownersSeen = owners
		return
	}
	if len(mb.ownersSeen) != len(owners) {
		u.onForgetDone(id, u.reassignedOn(mb, id)) // no look before: the model's guess
		return
	}
	var parts []node.ForgetPartition
	for p, was := range mb.ownersSeen {
		if was == id {
			e := mb.n.PartitionEpoch(u.topicID, uint32(p))
			parts = append(parts, node.ForgetPartition{TopicID: u.topicID, Partition: uint32(p),
				From: id, To: owners[p], Epoch: e, FirstOffset: meta.EpochBase(e)})
		}
	}
	u.onForgetDone(id, parts)
}

// forgetOpen: a forget was proposed and its outcome is not known yet.
func (u *run) forgetOpen() bool { return u.forgetProposed && u.forgotten == 0 }

// onForgetAnswer takes the forget's answer: done; refused for good (the node may come
// back); or open (a timeout, a leader change: tried again at the next poll, where an
// applied one is seen on a replica or answered "forgotten" already).
func (u *run) onForgetAnswer(resp node.Response) {
	u.forgetPending = false
	if u.forgotten != 0 {
		return // a replica applied it first (forgetApplied)
	}
	id := u.members[u.outageNode].id
	switch err := resp.Err; {
	case err == nil && resp.Forget != nil:
		u.onForgetDone(id, resp.Forget.Partitions)
	case errors.Is(err, node.ErrRefused) && strings.Contains(err.Error(), "forgotten"):
		if via, ok := u.upNode(); ok {
			u.onForgetDone(id, u.reassignedOn(u.members[via], id))
		}
	case errors.Is(err, node.ErrRefused), errors.Is(err, node.ErrMemberNotFound):
		u.forgetProposed = false // refused before the log: the node comes back as planned
	}
}

// reassignedOn lists the partitions of the main topic a forget of id gave away, as mb's
// replica holds them (a forget whose answer was lost).
func (u *run) reassignedOn(mb *member, id uint64) []node.ForgetPartition {
	var out []node.ForgetPartition
	for p := range uint32(u.o.Partitions) {
		if o, known := u.owners[moveKey{u.topicID, p}]; known && o != id {
			continue // another member's before the forget: its epoch is a move's (moves.go)
		}
		if e := mb.n.PartitionEpoch(u.topicID, p); e > 0 {
			to, _ := mb.n.PartitionOwner(u.topicID, p)
			out = append(out, node.ForgetPartition{TopicID: u.topicID, Partition: p, From: id, To: to,
				Epoch: e, FirstOffset: meta.EpochBase(e)})
		}
	}
	return out
}

// onForgetDone notes member id forgotten: it stays down, its reassigned partitions get
// their new owner and base, and what only it held is given up.
func (u *run) onForgetDone(id uint64, parts []node.ForgetPartition) {
	u.forgotten = id
	u.stats.Forgotten++
	clear(u.owners) // learnt again from the replicas; the reassigned ones below
	for _, p := range parts {
		k := moveKey{p.TopicID, p.Partition}
		u.reassigned[k] = reassignment{from: p.From, base: p.FirstOffset}
		u.owners[k] = p.To
	}
	u.giveUpForgotten(id)
}

// giveUpForgotten takes out of the model's missing messages those only the forgotten
// node held.
func (u *run) giveUpForgotten(id uint64) {
	var live []invariants.BrokerImage
	resent := map[uint64]bool{} // in a live WAL whose dispatcher will send it again
	for _, mb := range u.members {
		if mb.id == id {
			continue
		}
		img := u.readImage(mb)
		for m := range maps.Keys(img.WALIDs) { //narad:unordered (builds a set)
			// Sent again unless a commit of it was answered: by the forgotten node or by a
			// node its partition moved from to the forgotten one over the network, or here
			// (a local commit, in a copy this node may have given away since). Cluster
			// seed 740: that copy is gone with the move, and the dispatcher that saw the
			// answer never sends it again.
			if len(u.commits.committedAt[m]) == 0 && !u.commits.localAt[m][mb.id] {
				resent[m] = true
			}
		}
		live = append(live, u.withoutReassigned(img))
	}
	inLogs := u.mainTopicIDs(live)
	for _, m := range sortedKeys(u.m.acked) {
		kept := inLogs[m] || resent[m]
		if u.m.delivered[m] == 0 && !kept && !u.m.givenUp[m] {
			u.m.givenUp[m] = true
			u.m.missing--
			u.stats.GivenUp++
		}
	}
}

// withoutReassigned drops from a live node's image the partitions the forget reassigned:
// a live node's copy of one is a move's copy (the forgotten node owned it), which its
// node removes before it serves the partition empty under the new epoch (core/node
// move.go, moveDiscarding), unless it was complete and its cutover applied first; the
// forget gives those records up all the same (a delivery of one later is allowed).
func (u *run) withoutReassigned(img invariants.BrokerImage) invariants.BrokerImage {
	out := img
	out.Parts = map[string]map[uint64][]byte{}
	for dir, recs := range img.Parts { //narad:unordered (builds a map)
		ref, ok := invariants.PartitionOf("parts/" + dir)
		if _, moved := u.reassigned[moveKey{ref.TopicID, ref.Index}]; ok && moved {
			continue
		}
		out.Parts[dir] = recs
	}
	return out
}

// oweAgain: a message given up is sent in a commit again (a process that crashed before
// its checkpoint covered the commit the forgotten node answered, or a node down at the
// forget, replays its WAL): it has a live copy on its way, and is owed again.
func (u *run) oweAgain(id uint64) {
	if u.m.givenUp[id] {
		delete(u.m.givenUp, id)
		u.stats.OwedAgain++
		if u.m.delivered[id] == 0 {
			u.m.missing++
		}
	}
}

// recOwner is the member that owned record k's partition when the record was there:
// the forgotten node for the records of an epoch a forget replaced.
func (u *run) recOwner(k recKey) (uint64, bool) {
	if r, ok := u.reassigned[moveKey{k.topicID, k.part}]; ok && k.offset < r.base {
		return r.from, true
	}
	return u.owner(k.topicID, k.part)
}

// isForgottenNode reports whether node index i was forgotten (it is never restarted).
func (u *run) isForgottenNode(i int) bool {
	return u.forgotten != 0 && u.members[i].id == u.forgotten
}
