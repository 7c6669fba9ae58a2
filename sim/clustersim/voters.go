package clustersim

import (
	"fmt"
	"slices"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/invariants"
)

// VotersBoundNs bounds the wait, once the cluster is healed, for every replica's
// configuration to hold meta.VotersTarget voters: the leader promotes live, caught-up
// learners (core/meta promote.go), so a cluster grown from one node gets the voters that
// let it survive a failure.
const VotersBoundNs = 20_000_000_000

// awaitVoters runs the healed cluster until every up node's replica has the target
// number of voters, all of them members of the run, none forgotten (forget.go) or
// removed (decommission.go).
func (u *run) awaitVoters() {
	if u.err != nil {
		return
	}
	var gone []uint64
	var want int
	short := func() ([]string, bool) {
		// Looked at each time: a forget whose answer was lost is seen settled on a replica
		// meanwhile (forgetStep goes on polling; cluster seed 504).
		gone = u.goneIDs() // forgotten (forget.go) or removed (decommission.go): out for good
		want = meta.VotersTarget(len(u.members) - len(gone))
		var out []string
		for _, mb := range u.members {
			if !mb.up {
				continue
			}
			vs := mb.n.Voters()
			stranger := slices.ContainsFunc(vs, func(v uint64) bool {
				return !slices.Contains(u.ids, v) || slices.Contains(gone, v)
			})
			if len(vs) != want || stranger {
				out = append(out, fmt.Sprintf("n%d:%v", mb.id, vs))
			}
		}
		return out, true
	}
	if left := invariants.AwaitNone(u.s.Now, u.healStep, short, VotersBoundNs); len(left) > 0 {
		u.violate(fmt.Errorf("voters: %d s after the heal a replica's configuration does not have %d voters: %v",
			VotersBoundNs/1_000_000_000, want, left))
		return
	}
	u.stats.Promoted = uint64(max(want-u.o.Nodes, 0))
}
