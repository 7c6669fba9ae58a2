package metasim

import (
	"fmt"

	"github.com/narad/narad/core/meta"
)

// Move seeds (Options.Moves): besides creating topics, the clients drive partition moves
// through the log as a destination node and the controller would (meta moves.go): start
// a move of a random owned partition to a random member, freeze a copying one, cut a
// frozen one over, or abort one, each proposed to a random replica that is up, with the
// move's epoch as that replica knows it (a stale replica's command is refused at apply).
// Answers are not retried. Checked at every apply on every replica (check "moves"): one
// epoch of a partition never has two owners, over the whole run: the fence a cutover
// relies on (an owner serves commits of its epoch only).

// moveName marks a move command in a replica's pending proposals.
const moveName = "move"

// moveStep proposes one move command; it reports whether it did.
func (u *run) moveStep() bool {
	if !u.o.Moves || !u.r.Chance(0.3) {
		return false
	}
	i, ok := u.pickUp()
	if !ok {
		return false
	}
	rep := u.reps[i]
	c, ok := u.drawMove(rep.s)
	if !ok {
		return false
	}
	u.tokens++
	rep.pending[u.tokens] = moveName
	u.stats.MovesProposed++
	u.record('M', uint64(i), u.tokens, uint64(c.Kind))
	rep.s.Propose(u.nowOf(rep), u.tokens, c)
	u.drain(i)
	return true
}

// drawMove draws a move command from the state of replica s: a step of a move in
// progress (mostly the next one), or a new move.
func (u *run) drawMove(s *meta.Store) (meta.Command, bool) {
	if moves := s.Moves(); len(moves) > 0 && u.r.Chance(0.6) {
		mv := moves[u.r.Intn(len(moves))]
		c := meta.Command{Kind: meta.FreezeMove, TopicID: mv.TopicID, Part: mv.Partition, Epoch: mv.Epoch}
		switch {
		case u.r.Chance(0.15):
			c.Kind, c.Epoch = meta.AbortMove, 0
		case mv.State == meta.MoveFrozen:
			c.Kind = meta.CutOverMove
		}
		return c, true
	}
	topics := s.Topics()
	members := s.Members()
	if len(topics) == 0 || len(members) == 0 {
		return meta.Command{}, false
	}
	t := topics[u.r.Intn(len(topics))]
	owners := s.Owners(t.ID)
	if len(owners) == 0 {
		return meta.Command{}, false
	}
	return meta.Command{Kind: meta.StartMove, TopicID: t.ID, Part: uint32(u.r.Intn(len(owners))),
		Member: members[u.r.Intn(len(members))].ID}, true
}

// onMoveDone counts a move command's answer.
func (u *run) onMoveDone(d meta.ProposeDone) {
	if d.Err == nil {
		u.stats.MovesApplied++
	}
}

// partEpoch names one epoch of one partition of a topic incarnation.
type partEpoch struct {
	topic uint64
	part  uint32
	epoch uint32
}

// checkEpochOwners is the check "moves" on replica rep's state after an apply.
func (u *run) checkEpochOwners(rep *replica) {
	if !u.o.Moves {
		return
	}
	for _, t := range rep.s.Topics() {
		for p, o := range rep.s.Owners(t.ID) {
			k := partEpoch{t.ID, uint32(p), rep.s.PartitionEpoch(t.ID, uint32(p))}
			if prev, ok := u.epochOwner[k]; ok && prev != o {
				u.violate(fmt.Errorf("moves: replica %d has partition %d of topic %d owned by %d at epoch %d, "+
					"which member %d owned", rep.id, p, t.ID, o, k.epoch, prev))
				return
			}
			if k.epoch > 0 {
				u.stats.EpochChecks++
			}
			u.epochOwner[k] = o
		}
	}
}
