package clustersim

import (
	"fmt"
	"maps"
	"slices"
)

// heal stops every fault (disks, network, crashes, producers), brings every node up, and
// lets the consumers ack what they get until every message answered 202 was delivered
// (invariant 2), within HealBoundNs; then the clients' history must be linearizable.
func (u *run) heal() {
	u.healing = true
	start := u.s.Now()
	u.net.SetFaults(false)
	u.net.Heal()
	for i, mb := range u.members {
		mb.d.SetFaults(false)
		if !mb.up {
			u.start(i)
		}
	}
	for u.err == nil && u.m.missing > 0 {
		e, ok := u.s.Next()
		if !ok || u.s.Now()-start > HealBoundNs {
			break
		}
		u.step(e)
	}
	if u.err != nil {
		return
	}
	if u.m.missing > 0 {
		u.violate(fmt.Errorf("invariant 2: %d messages answered 202 never delivered %d s after healing (ids %v)",
			u.m.missing, HealBoundNs/1_000_000_000, u.undelivered(10)))
		return
	}
	u.stats.HealNs = u.s.Now() - start
	u.checkImages()
	u.checkLinearizable()
}

func (u *run) undelivered(max int) []uint64 {
	var out []uint64
	for _, id := range slices.Sorted(maps.Keys(u.m.acked)) {
		if u.m.delivered[id] == 0 && len(out) < max {
			out = append(out, id)
		}
	}
	return out
}
