package metasim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/narad/narad/core/meta"
)

// Forget seeds (Options.OutageNs): one replica crashes once and stays down long enough
// for the controller to mark it dead, and the clients then forget it (meta.ForgetMember,
// proposed to random replicas and retried while it is down). When it comes back it is
// outside the configuration for good. Checked after the heal (check "forget", within
// ForgetBoundNs): every replica in the configuration holds the forgotten id as
// forgotten, not as a member, and not in its raft configuration; the forgotten replica
// is never a member again however often its heartbeats are heard.

// ForgetBoundNs bounds, after the heal, how long the configuration may keep a forgotten id.
const ForgetBoundNs = 10_000_000_000

// forgetName marks a forget in a replica's pending proposals.
func forgetName(id uint64) string { return fmt.Sprintf("forget:%d", id) }

func forgetOf(name string) (uint64, bool) {
	var id uint64
	_, err := fmt.Sscanf(name, "forget:%d", &id)
	return id, err == nil
}

// startOutage crashes a random replica and keeps it down for OutageNs.
func (u *run) startOutage() {
	if u.healing {
		return
	}
	i := u.r.Intn(len(u.reps))
	if !u.reps[i].up {
		return
	}
	u.outage = i
	u.stats.Outages++
	u.net.Heal()
	u.crashFor(i, u.o.OutageNs)
}

// inOutage: the outage's replica is down. Meanwhile no other crash and no cut, so that
// the others keep a quorum to mark it dead and forget it (as clustersim's outage).
func (u *run) inOutage() bool { return u.outage >= 0 && !u.reps[u.outage].up }

// forgetStep proposes the forget of the replica of the outage while it is down, dead on
// some replica's state and not answered forgotten yet; it reports whether it did.
func (u *run) forgetStep() bool {
	if !u.inOutage() || u.forgotten[u.reps[u.outage].id] || u.forgetting {
		return false
	}
	id := u.reps[u.outage].id
	i, ok := u.pickUp()
	if !ok || !u.reps[i].s.MemberDead(id) || !u.r.Chance(0.3) {
		return false
	}
	rep := u.reps[i]
	u.tokens++
	rep.pending[u.tokens] = forgetName(id)
	u.forgetting = true
	u.stats.ForgetsProposed++
	u.record('F', uint64(i), u.tokens, id)
	rep.s.Propose(u.nowOf(rep), u.tokens, meta.Command{Kind: meta.ForgetMember, Member: id})
	u.drain(i)
	return true
}

// onForgetDone: applied, or refused as forgotten already (an earlier ambiguous attempt
// was applied), means forgotten; anything else is tried again while the replica is down.
func (u *run) onForgetDone(id uint64, err error) {
	u.forgetting = false
	if err == nil || errors.Is(err, meta.ErrForgotten) {
		u.forgotten[id] = true
		u.stats.Forgotten++
	}
}

// isForgotten: some replica in the configuration applied the forget of id (answered or
// not: a proposal lost with a crash may still have been applied).
func (u *run) isForgotten(id uint64) bool {
	if u.forgotten[id] {
		return true
	}
	for _, rep := range u.reps {
		if rep.up && rep.s.IsForgotten(id) {
			return true
		}
	}
	return false
}

// checkForgotten is the check after the heal: within ForgetBoundNs every replica not
// forgotten holds each forgotten id as forgotten, not as a member, and outside its raft
// configuration.
func (u *run) checkForgotten() {
	var ids []uint64
	for _, id := range u.ids {
		if u.isForgotten(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	start := u.s.Now()
	for u.err == nil {
		why := u.forgetState(ids)
		if why == "" {
			u.stats.ForgetChecks++
			return
		}
		e, ok := u.s.Next()
		if !ok || u.s.Now()-start > ForgetBoundNs {
			u.violate(fmt.Errorf("forget: %d ms after the heal %s", ForgetBoundNs/1_000_000, why))
			return
		}
		u.handle(e)
	}
}

// forgetState says what still holds a forgotten id ("" when nothing does).
func (u *run) forgetState(ids []uint64) string {
	for _, rep := range u.reps {
		if slices.Contains(ids, rep.id) {
			continue
		}
		for _, id := range ids {
			conf := slices.Concat(rep.s.Voters(), rep.s.Learners())
			switch {
			case !rep.s.IsForgotten(id):
				return fmt.Sprintf("replica %d does not hold member %d forgotten", rep.id, id)
			case rep.s.IsMember(id):
				return fmt.Sprintf("replica %d holds forgotten member %d as a member", rep.id, id)
			case slices.Contains(conf, id):
				return fmt.Sprintf("replica %d keeps forgotten member %d in its raft configuration %v", rep.id, id, conf)
			}
		}
	}
	return ""
}
