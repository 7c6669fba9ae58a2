package nodesim

import (
	"fmt"
	"strings"
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
		if u.healed() {
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
	if missing := u.undelivered(); len(missing) > 0 {
		u.violate(fmt.Errorf("invariant 2: %d messages answered 202 never delivered after healing (%s of simulated time, %d events): ids %s",
			len(missing), "120s", u.stats.HealEvents, idList(missing, 10)))
		return
	}
	u.finalChecks()
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
