package metasim

import (
	"fmt"
	"maps"
	"slices"
)

// checkLeader: at most one leader per term, over the whole run.
func (u *run) checkLeader(rep *replica) {
	if !rep.up || rep.s.LeaderID() != rep.id {
		return
	}
	term := rep.s.Term()
	isNew, err := u.meta.Leader(term, rep.id)
	if err != nil {
		u.violate(fmt.Errorf("invariant 6: %w", err))
		return
	}
	if isNew {
		u.stats.Leaders++
		u.record('L', rep.id, term)
	}
}

// onApply: replicas that report the state at the same index report the same term and
// the same topics (every replica applies the same sequence; crashes re-apply it).
func (u *run) onApply(i int, index, term uint64) {
	u.stats.AppliedChecks++
	for _, m := range u.reps[i].s.Members() {
		if !m.Alive {
			u.stats.DeadMarks++ // (counted per replica and index: a sign the controller ran)
		}
	}
	if err := u.meta.Applied(u.reps[i].id, index, term, u.reps[i].s.StateDigest()); err != nil {
		u.violate(fmt.Errorf("invariant 6: %w", err))
	}
	u.checkEpochOwners(u.reps[i])
}

// heal stops every fault, brings every replica up and requires, within HealBoundNs,
// every answered topic and every waiting one applied on every replica, at one index.
func (u *run) heal() {
	u.healing = true
	start := u.s.Now()
	u.net.SetFaults(false)
	u.net.Heal()
	for i, rep := range u.reps {
		rep.d.SetFaults(false)
		if !rep.up {
			u.start(i)
		}
	}
	u.names++
	u.waiting = append(u.waiting, fmt.Sprintf("heal%d", u.names)) // a fresh entry must commit
	for u.err == nil {
		if u.healed() {
			u.stats.HealNs = u.s.Now() - start
			u.checkForgotten()
			return
		}
		e, ok := u.s.Next()
		if !ok || u.s.Now()-start > HealBoundNs {
			u.violate(fmt.Errorf("liveness: not healed %d ms after faults stopped: %s", HealBoundNs/1_000_000, u.healState()))
			return
		}
		u.handle(e)
	}
}

func (u *run) healed() bool {
	if len(u.waiting) > 0 || len(u.joins) > 0 {
		return false
	}
	var index uint64
	for _, rep := range u.reps {
		if u.isForgotten(rep.id) {
			continue // outside the configuration for good (forget.go)
		}
		if !rep.up || len(rep.pending) > 0 {
			return false
		}
		if index == 0 {
			index = rep.s.AppliedIndex()
		}
		if rep.s.AppliedIndex() != index || !u.holdsAcked(rep) || !u.allAlive(rep) {
			return false
		}
	}
	return true
}

// allAlive: every node not forgotten joined and the replica's state says it is alive
// (the leader heard it within DeadAfterNs). Whether a forgotten one is a member is the
// forget check's (forget.go).
func (u *run) allAlive(rep *replica) bool {
	alive := map[uint64]bool{}
	for _, m := range rep.s.Members() {
		alive[m.ID] = m.Alive
	}
	for _, id := range u.ids {
		if !alive[id] && !u.isForgotten(id) {
			return false
		}
	}
	return true
}

func (u *run) holdsAcked(rep *replica) bool {
	for name := range u.acked { //narad:unordered (a yes/no answer)
		if _, ok := rep.s.Topic(name); !ok {
			return false
		}
	}
	return true
}

func (u *run) healState() string {
	s := fmt.Sprintf("waiting=%d acked=%d", len(u.waiting), len(u.acked))
	for _, rep := range u.reps {
		missing := 0
		for _, name := range slices.Sorted(maps.Keys(u.acked)) {
			if _, ok := rep.s.Topic(name); !ok {
				missing++
			}
		}
		s += fmt.Sprintf("; replica %d up=%v leader=%d term=%d applied=%d pending=%d missing=%d members=%v",
			rep.id, rep.up, rep.s.LeaderID(), rep.s.Term(), rep.s.AppliedIndex(), len(rep.pending), missing, rep.s.Members())
	}
	return s
}
