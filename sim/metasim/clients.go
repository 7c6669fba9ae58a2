package metasim

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/core/meta"
)

// clientStep proposes one topic creation to a random replica that is up: a name that
// still waits for an answer, or (outside the heal phase) a new one.
func (u *run) clientStep() {
	if u.healing {
		u.healStep()
		return
	}
	if u.forgetStep() || u.moveStep() {
		return
	}
	if len(u.joins) > 0 && u.r.Chance(0.3) {
		id := u.joins[0]
		u.joins = u.joins[1:]
		if i, ok := u.pickUp(); ok {
			u.proposeJoin(i, id)
		} else {
			u.joins = append(u.joins, id)
		}
		return
	}
	var name string
	switch {
	case len(u.waiting) > 0 && u.r.Chance(0.5):
		name, u.waiting = u.waiting[0], u.waiting[1:]
	default:
		u.names++
		name = fmt.Sprintf("t%d", u.names)
	}
	i, ok := u.pickUp()
	if !ok {
		u.waiting = append(u.waiting, name)
		return
	}
	u.propose(i, name)
}

// pickUp draws a replica that is up.
func (u *run) pickUp() (int, bool) {
	var up []int
	for i, rep := range u.reps {
		if rep.up {
			up = append(up, i)
		}
	}
	if len(up) == 0 {
		return 0, false
	}
	return up[u.r.Intn(len(up))], true
}

// healStep, in the heal phase, proposes every waiting name to the leader the replicas
// know of, as a client following ErrNotLeader redirects would.
func (u *run) healStep() {
	for i, rep := range u.reps {
		if !rep.up || rep.s.LeaderID() != rep.id {
			continue
		}
		names, joins := u.waiting, u.joins
		u.waiting, u.joins = nil, nil
		for _, name := range names {
			u.propose(i, name)
		}
		for _, id := range joins {
			u.proposeJoin(i, id)
		}
		return
	}
}

func (u *run) propose(i int, name string) {
	rep := u.reps[i]
	u.tokens++
	rep.pending[u.tokens] = name
	u.stats.Proposed++
	u.record('P', uint64(i), u.tokens)
	rep.s.Propose(u.nowOf(rep), u.tokens, meta.Command{Kind: meta.CreateTopic, Name: name})
	u.drain(i)
}

// joinName marks a join in a replica's pending proposals.
func joinName(id uint64) string { return fmt.Sprintf("join:%d", id) }

func (u *run) proposeJoin(i int, id uint64) {
	rep := u.reps[i]
	u.tokens++
	rep.pending[u.tokens] = joinName(id)
	u.stats.Proposed++
	u.record('J', uint64(i), u.tokens, id)
	rep.s.Propose(u.nowOf(rep), u.tokens, meta.Command{Kind: meta.JoinMember, Member: id, Addr: addrOf(id), Alive: true})
	u.drain(i)
}

// onDone takes a proposal's answer. Applied (or ErrExists: an earlier, ambiguous attempt
// under the same name was applied) means committed; anything else is proposed again.
func (u *run) onDone(rep *replica, d meta.ProposeDone) {
	name, ok := rep.pending[d.Token]
	if !ok {
		u.violate(fmt.Errorf("protocol: replica %d answered unknown proposal %d", rep.id, d.Token))
		return
	}
	delete(rep.pending, d.Token)
	u.record('A', rep.id, d.Token, boolBit(d.Err == nil))
	if name == moveName {
		u.onMoveDone(d)
		return
	}
	if id, isForget := forgetOf(name); isForget {
		u.onForgetDone(id, d.Err)
		return
	}
	if id, isJoin := joinOf(name); isJoin {
		if d.Err == nil || errors.Is(d.Err, meta.ErrForgotten) {
			u.joined[id] = true // (a forgotten member's join is settled: never again)
		} else {
			u.joins = append(u.joins, id)
		}
		return
	}
	if d.Err == nil || errors.Is(d.Err, meta.ErrExists) {
		u.stats.Acked++
		u.acked[name] = true
		return
	}
	u.stats.Refused++
	u.waiting = append(u.waiting, name)
}

// requeue makes a crashed replica's unanswered proposals ambiguous: proposed again.
func (u *run) requeue(rep *replica) {
	for _, tok := range slices.Sorted(maps.Keys(rep.pending)) {
		u.stats.Lost++
		if _, isForget := forgetOf(rep.pending[tok]); isForget {
			u.forgetting = false // ambiguous: isForgotten reads the replicas
			continue
		}
		if rep.pending[tok] == moveName { // not retried: the next steps read the replicas
			continue
		}
		if id, isJoin := joinOf(rep.pending[tok]); isJoin {
			u.joins = append(u.joins, id)
			continue
		}
		u.waiting = append(u.waiting, rep.pending[tok])
	}
	rep.pending = map[uint64]string{}
}

func joinOf(name string) (uint64, bool) {
	var id uint64
	_, err := fmt.Sscanf(name, "join:%d", &id)
	return id, err == nil
}
