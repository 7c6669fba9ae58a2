package nodesim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	var late lateness
	for i := 0; u.err == nil && i < HealEventsMax; i++ {
		if u.healed() {
			break
		}
		e, ok := u.s.Next()
		if !ok || u.s.Now() > deadline {
			break
		}
		late.watch(u, start)
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
	late.nextNs = 0
	late.watch(u, start)
	if len(late.at) > 0 {
		u.violate(late.violation())
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

// lateness is invariant 11's watch. A message is consumable once it is in the durable
// partition log (committed) or was delivered. Past the bound, it takes the messages not
// consumable yet, then notes when each becomes so.
type lateness struct {
	open   map[uint64]bool  // not consumable at the bound, nor since
	at     map[uint64]int64 // late: consumable this long after the heal began
	nextNs int64            // the next look at the durable image
}

// lateLookNs spaces the looks at the durable image once messages are late.
const lateLookNs = 100_000_000

// watch is called before every heal event.
func (l *lateness) watch(u *run, start int64) {
	now := u.s.Now()
	if now-start <= HealLivenessNs || (l.open != nil && (len(l.open) == 0 || now < l.nextNs)) {
		return
	}
	l.nextNs = now + lateLookNs
	committed := u.readImage().IDs
	if l.open == nil {
		l.open, l.at = map[uint64]bool{}, map[uint64]int64{}
		for _, id := range u.undelivered() {
			if !committed[id] {
				l.open[id] = true
			}
		}
		return
	}
	for _, id := range slices.Sorted(maps.Keys(l.open)) {
		if u.m.delivered[id] > 0 || committed[id] {
			delete(l.open, id)
			l.at[id] = now - start
		}
	}
}

func (l *lateness) violation() error {
	ids := slices.Sorted(maps.Keys(l.at))
	slices.SortStableFunc(ids, func(a, b uint64) int { return cmp.Compare(l.at[b], l.at[a]) }) // latest first
	var b strings.Builder
	for i, id := range ids[:min(len(ids), 5)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "message %d at %.3f s (late by %.3f s)", id, float64(l.at[id])/1e9, float64(l.at[id]-HealLivenessNs)/1e9)
	}
	return fmt.Errorf("invariant 11: %d messages answered 202 became consumable (committed to a partition, or delivered) later than %d s after the heal began: %s",
		len(ids), HealLivenessNs/1_000_000_000, b.String())
}
