package clustersim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// HealLivenessNs is invariant 11's bound: after the heal begins (faults off, every node
// up, every link restarted), every message answered 202 is delivered within it. It is
// the longest chain of waits a correct cluster goes through, with margin:
//
//   - a node the heal restarts recovers (its WAL, metastore and partitions: milliseconds
//     of simulated disk) and its connections come up within ConnectMaxNs (1 s at most);
//   - the metastore elects a leader and catches up: ElectionTicks (10) of 100 ms, twice
//     for a split vote, about 2 s;
//   - a member marked dead during the faults is heard again within DeadAfterNs (5 s at
//     most) of its heartbeats, while its partitions' records reroute meanwhile;
//   - a remote commit lost before the heal fails when its connection restarts (the heal
//     restarts every link, as the real transport reports a connection's end: PeerReset),
//     and one whose send fails before a connection is up fails at once (SendFailed):
//     the dispatcher backs off 1 s (FailureBackoffNs) before each retry, and reroutes
//     after three failed passes, so about 3 s;
//   - a bucket an owner answered "wrong incarnation" (a replica that lagged) waits for a
//     leader-confirmed barrier before it commits or discards; a barrier lost before the
//     heal is answered only by the metastore's request timeout (RequestTimeoutTicks, 100
//     ticks of 100 ms: 10 s) and asked again after the backoff (1 s);
//   - the dispatcher's linger (5 ms), a partition commit (fdatasync and read-back, a few
//     ms) and the consumers' think time and long polls (tens of ms).
//
// The barrier's timeout is the longest link (seed 173 found it: 10.5 s); with the
// backoff and a commit's retries after it, 15 s. The commit timeout (30 s in half the
// seeds) is not in the chain: no commit sent after the heal is lost (faults are off),
// and none sent before it outlives the links' restart.
const HealLivenessNs = 15_000_000_000

// heal stops every fault (disks, network, crashes, producers), brings every node up,
// restarts every link, and lets the consumers ack what they get until every message
// answered 202 was delivered (invariant 2 within HealBoundNs, invariant 11 within
// HealLivenessNs); then the clients' history must be linearizable.
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
	for x, a := range u.ids {
		for _, b := range u.ids[x+1:] {
			u.resetLink(a, b, true)
		}
	}
	var late lateness
	for u.err == nil && u.m.missing > 0 {
		e, ok := u.s.Next()
		if !ok || u.s.Now()-start > HealBoundNs {
			break
		}
		late.watch(u, start)
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
	late.nextNs = 0
	late.watch(u, start)
	if len(late.at)+len(late.open) > 0 {
		u.violate(late.violation())
		return
	}
	u.stats.HealNs = u.s.Now() - start
	u.checkImages()
	u.checkLinearizable()
}

// lateness is invariant 11's watch. A message is consumable once it is in a durable
// partition log on some node (committed: its owner serves it) or was delivered; one
// leased to a consume whose answer was lost is consumable all the same (the lease's
// visibility timeout is invariant 9's business, not the commit path's). Past the bound,
// it takes the messages not consumable yet, then notes when each becomes so.
type lateness struct {
	open   map[uint64]bool  // not consumable at the bound, nor since
	at     map[uint64]int64 // late: consumable this long after the heal began
	nextNs int64            // the next look at the durable images
}

// lateLookNs spaces the looks at the durable images once messages are late.
const lateLookNs = 100_000_000

// watch is called before every heal event.
func (l *lateness) watch(u *run, start int64) {
	now := u.s.Now()
	if now-start <= HealLivenessNs || (l.open != nil && (len(l.open) == 0 || now < l.nextNs)) {
		return
	}
	l.nextNs = now + lateLookNs
	committed := map[uint64]bool{}
	for _, mb := range u.members {
		maps.Copy(committed, u.readImage(mb).IDs)
	}
	if l.open == nil {
		l.open, l.at = map[uint64]bool{}, map[uint64]int64{}
		for _, id := range u.undelivered(len(u.m.acked)) {
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

func (u *run) undelivered(max int) []uint64 {
	var out []uint64
	for _, id := range slices.Sorted(maps.Keys(u.m.acked)) {
		if u.m.delivered[id] == 0 && len(out) < max {
			out = append(out, id)
		}
	}
	return out
}
