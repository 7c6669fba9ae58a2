package nodesim

import (
	"fmt"
	"strings"

	"github.com/narad/narad/invariants"
)

// Bounds of the heal phase: faults are off, so a correct node delivers every acknowledged
// message long before either.
const (
	HealTimeNs    = 120_000_000_000 // simulated time
	HealEventsMax = 3_000_000
)

// heal turns the disk's faults off, stops crashes and producers, and lets the consumers
// ack everything they get until every message answered 202 was delivered (invariant 2),
// within HealTimeNs of simulated time. Nothing the faults left behind is repaired by hand:
// the node recovers from whatever is on the disk.
func (u *run) heal() {
	u.healing = true
	u.d.SetFaults(false)
	u.record('H')
	if !u.up {
		u.s.At(u.s.Now()+1, event{kind: evRestart})
	}
	deadline := u.s.Now() + HealTimeNs
	for i := 0; u.err == nil && i < HealEventsMax; i++ {
		if u.m.missing == 0 {
			break
		}
		e, ok := u.s.Next()
		if !ok || u.s.Now() > deadline {
			break
		}
		u.stats.HealEvents++
		u.handle(e)
	}
	if u.err != nil {
		return
	}
	u.checkDurable()
	if missing := u.m.undelivered(); len(missing) > 0 {
		u.violate(fmt.Errorf("invariant 2: %d messages answered 202 never delivered after healing (%s of simulated time, %d events): ids %s",
			len(missing), "120s", u.stats.HealEvents, idList(missing, 10)))
		return
	}
	u.checkLinearizable()
}

// checkLinearizable closes the history (produces still unanswered are ambiguous; every
// message gets its final read: was it ever delivered) and runs porcupine over it.
func (u *run) checkLinearizable() {
	for _, tok := range sortedKeys(u.pending) {
		if req := u.pending[tok]; req.kind == reqProduce {
			for _, id := range req.ids {
				u.hist.Produce(id, req.callNs, u.s.Now(), invariants.Ambiguous)
			}
		}
	}
	delivered := func(id uint64) bool { return u.m.delivered[id] > 0 }
	if err := u.hist.Close(u.s.Now()+1, u.m.nextID, delivered); err != nil {
		u.violate(fmt.Errorf("linearizability (porcupine): %w", err))
	}
}

func idList(ids []uint64, max int) string {
	var b strings.Builder
	for i, id := range ids {
		if i == max {
			fmt.Fprintf(&b, " …")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d", id)
	}
	return b.String()
}
