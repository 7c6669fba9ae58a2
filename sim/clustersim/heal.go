package clustersim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/narad/narad/invariants"
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
//     the dispatcher backs off 1 s (FailureBackoffNs) before each retry, to the same
//     owner while membership calls it alive (failed commits never reroute), so about 1 s
//     once the owner is up and its connection is;
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
		if !mb.up && !u.isGoneNode(i) && !(u.forgetOpen() && i == u.outageNode) {
			u.start(i) // (an open forget's node starts once it is settled: forget.go)
		}
	}
	for x, a := range u.ids {
		for _, b := range u.ids[x+1:] {
			u.resetLink(a, b, true)
		}
	}
	late := invariants.Lateness{BoundNs: HealLivenessNs}
	for u.err == nil && u.m.missing > 0 {
		e, ok := u.s.Next()
		if !ok || u.s.Now()-start > HealBoundNs {
			break
		}
		late.Watch(u.s.Now(), start, u.look)
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
	if err := late.Final(u.s.Now(), start, u.look); err != nil {
		u.violate(err)
		return
	}
	u.stats.HealNs = u.s.Now() - start
	u.awaitReclaimed()
	u.awaitReopened()
	u.awaitDecommissioned() // before the voters: a removal changes the target
	u.awaitMovesDone()
	u.awaitVoters()
	if u.err != nil {
		return
	}
	u.checkImages()
	u.checkLinearizable()
}

// look is invariant 11's view of the run: a message is consumable once it is in a
// durable partition log (committed: its owner serves it) or was delivered.
func (u *run) look() ([]uint64, func(uint64) bool) {
	committed := map[uint64]bool{}
	for _, mb := range u.members {
		maps.Copy(committed, u.readImage(mb).IDs)
	}
	return u.undelivered(len(u.m.acked)), func(id uint64) bool { return u.m.delivered[id] > 0 || committed[id] }
}

func (u *run) undelivered(max int) []uint64 {
	var out []uint64
	for _, id := range slices.Sorted(maps.Keys(u.m.acked)) {
		if u.m.delivered[id] == 0 && !u.m.givenUp[id] && len(out) < max {
			out = append(out, id)
		}
	}
	return out
}
