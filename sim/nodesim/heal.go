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

// HealLivenessNs is invariant 11's bound for one node: after the heal begins, every
// message answered 202 is consumable (committed to its partition, or delivered) within
// it. The chain of waits it covers, with margin: the restart's recovery of the WAL, the
// metastore and the partitions (a few thousand ops of the simulated disk, at most a
// few hundred ms at its drawn latencies); the dispatcher's linger (5 ms) and a partition
// commit (fdatasync and read-back, a few ms); a commit that failed (a partition still
// recovering) waiting out the dispatcher's FailureBackoffNs (1 s), twice. No commit
// timeout is in the chain: a single node's commits are local and always answered.
const HealLivenessNs = 5_000_000_000

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
	start := u.s.Now()
	deadline := start + HealTimeNs
	late := invariants.Lateness{BoundNs: HealLivenessNs}
	for i := 0; u.err == nil && i < HealEventsMax; i++ {
		if u.healed() {
			break
		}
		e, ok := u.s.Next()
		if !ok || u.s.Now() > deadline {
			break
		}
		late.Watch(u.s.Now(), start, u.look)
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
	if err := late.Final(u.s.Now(), start, u.look); err != nil {
		u.violate(err)
		return
	}
	u.awaitReclaimed()
	u.awaitReopened()
	if u.err != nil {
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

// look is invariant 11's view of the run: a message is consumable once it is in a
// durable partition log (committed: its owner serves it) or was delivered.
func (u *run) look() ([]uint64, func(uint64) bool) {
	committed := u.readImage().IDs
	return u.undelivered(), func(id uint64) bool { return u.m.delivered[id] > 0 || committed[id] }
}
