package clustersim

import (
	"github.com/narad/narad/sim"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// Seeds that once failed, kept as regression tests (with what they found).
var regressionSeeds = map[uint64]string{
	1:      "a routed ack the network delivered twice: the copy's 410 overtook the first copy's OK (owners now ignore a peer's request id seen before)",
	36:     "a commit request the network delivered twice was committed twice: the same message at two offsets with no cause (owners now ignore it); and porcupine blew up on one read per delivered record (now one per partition per answer)",
	47:     "a client whose think time was 0 looped at one instant (the liveness guard reports it)",
	68:     "the commit tracker counted timeouts in simulated time, not on the sender's clock",
	7:      "after a process crash WAL recovery trusted a listed segment whose create was never made durable (SyncDir EIO); a machine crash then unlinked acknowledged records",
	15:     "the 31 s stall: commits sent before a connection was up (after the heal restarted the links) failed at the sender unreported, and held their partitions for the 30 s commit timeout (invariant 11; narad_mut_sendfailsilent brings it back)",
	173:    "a discard-confirming barrier lost before the heal held a partition's records for the metastore's 10 s request timeout (invariant 11's bound counts it)",
	164:    "a lone producer stuck in a synchronous produce for a dead owner's commit timeout acked 13 messages: vacuous (two producers at least now)",
	16:     "an ack frame whose write the disk misdirected, lost at the owner's next machine crash, was not excused: the model counted only corrupted and lost writes, on the whole disk (now sim.Disk.Damage of the partition's ack directory between the ack and the owner's last crash)",
	21:     "same as 16",
	58:     "same as 16",
	69:     "after a process crash lease recovery trusted a listed acks.log whose create was never made durable (Create EIO of another partition stopped the node before the directory sync); a machine crash then dropped it with the acks of the next 1.5 s (core/lease row R1)",
	55:     "vacuous (topic never made): node 1's device filled (FillProb) before the topic existed; every recovery's raft.log rewrite failed on it, and the topic waits for every node to be a live member (FullKillsMax: the operator frees it)",
	285:    "a stats client answered at the instant it asked (every StatsRequest failed at the sender) asked again at that instant for ever: a livelock of the model (instantAnswerGapNs)",
	293:    "same as 285",
	135:    "an ack of a churn incarnation deleted meanwhile was answered lease gone, rightly: the check now excuses an incarnation whose delete was sent after its create",
	209:    "same as 135",
	377:    "a read fault flipped back the very bit a write fault had flipped: a damaged commit read back intact (the disk model now bounds read faults)",
	582:    "a node whose replica still held an earlier incarnation of the churn topic showed the owner's stats of the later one under it (a high watermark of 3 after reads at 33): StatsRequest names the topic only; the answer now names its incarnation (wire kind 15) and the asker keeps only its own",
	614394: "a false invariant-4 violation: a misdirected write left another log's offset-2 frame past a partition's damaged tail, and the checker's image let it replace the real offset 2 (invariants.ReadBrokerImage now keeps frames only at or above the offsets before them, as recovery does)",
	108502: "a spread consume's owner, whose replica already held a later incarnation of the churn topic, answered records of it; the entry node delivered them and then resolved the name to its own incarnation for their ack, answering 410 at once while their leases lived (invariant 9). The entry now delivers only records of its incarnation and releases the others at the owner",
	983:    "an ack answered after a 562 ms step back of its owner's clock joined a batch whose flush deadline was on the reading before the step, and was still unwritten at the owner's crash 137 ms later (core/lease now moves a pending deadline back with the clock)",
}

// Every seed above was found before the simulator had users (Options.Users): each runs
// without them, so that it keeps the scenario it found (narad-sim -sim cluster-nousers).
func TestRegressionSeeds(t *testing.T) {
	runRegressionSeeds(t, regressionSeeds, func(o *Options) { o.Users = false })
}

// runRegressionSeeds runs each seed of seeds, its options drawn then changed by adjust.
func runRegressionSeeds(t *testing.T, seeds map[uint64]string, adjust func(*Options)) {
	t.Helper()
	for _, seed := range slices.Sorted(maps.Keys(seeds)) {
		o := Draw(seed)
		adjust(&o)
		if res := Run(o); res.Violation != nil {
			t.Errorf("seed %d (%s): %v\n%s", seed, seeds[seed], res.Violation, o)
		}
	}
}

// Seeds that failed with users (as drawn), kept as regression tests. Each was found with
// the traces of its day; later trace changes may move the scenario elsewhere.
var regressionSeedsWithUsers = map[uint64]string{
	1673:   "invariant 10 without a cause: a message committed 1.8 s before its accepting node crashed was committed again; the node had rerouted earlier records of its partition, and the skip-set names a partition's done records only up to its first not done (copyCause now counts a crash after such a reroute)",
	1888:   "same as 1673",
	1240:   "vacuous: crashes every few hundred ms in a 3-node cluster kept raft from electing after the first leader's crash; nothing was answered (the crash schedule now waits while no up node follows an up leader)",
	2006:   "same as 1240",
	863617: "vacuous: both producers waited 20 s for synchronous produces whose owners' commits the network cuts held (a producer now gives up after produceWaitNs, as an HTTP client's timeout); and the admin moved on from a user whose create or restore was unanswered, leaving it cut off for seconds (the admin now retries that user until its change lands)",
	1085:   "a false reclaim violation: a partition's own removal of its acks.snap.tmp was taken for the reclaimer's (the check now holds directory removals only)",
	966:    "readiness: a restarted node was ready behind the leader: a late read answer meant for its earlier process (same barrier number) confirmed its catch-up barrier at a lower index (barriers are now numbered from a random base per process, meta.Config.ReadContextBase)",
	443:    "voters: a joiner that knew only the first node never joined once a promoted learner led (a node outside the raft configuration has its heartbeats relayed to the leader)",
	558481: "invariant 9, a false alarm: an ack answered OK was lost with a partition reopen that came after the owner took it but before the answer reached the client (a reopen is now counted from the ack's call)",
	87:     "invariant 2 in a forget seed: the forget's answer was open (a timeout) when the outage ended, the node came back, the forget applied and it stopped, its WAL with it (the model now keeps a node whose forget is open down until the forget is settled)",
	209:    "voters: a forget left four voters of four members (the leader now makes the voters past VotersTarget learners)",
	2284:   "dispatch: a partition failure answered by an owner later forgotten still counted after the forget gave the partition to a live member, and the dispatcher rerouted away from it (a failure now holds only while its owner owns the partition)",
	1598:   "voters, a false alarm: the check ran before the spare's removal had finished, counting it (the decommission check now runs first)",
	2669:   "invariant 2 in a decommission seed: the spare led the metastore when its own removal applied; handing its leadership on, it took produces (no longer draining: no longer a member) and stopped with them in its WAL (a removed node now refuses produces)",
	110:    "decommission, a false alarm: after a cancel took, a lagging replica still showed the spare draining, and the seed stopped decommissioning it again (the check now trusts only an answer, or the removal, once a cancel took)",
	606:    "decommission, a false alarm: a cancel whose answer was lost had ended the drain (the check now trusts only an answer, or the removal, once a cancel was asked)",
	7552:   "the scenario of 2669 after the cancel seeds changed that one (narad_mut_removedtakes was caught here until the forwards' ids changed its run: seed 158 now)",
	147662: "decommission: a stale duplicate of the forwarded cancel reached a later metastore leader and was applied again after the second decommission, ending its drain (a forwarded proposal now carries an id the replicated state applies at most once: core/meta forwards.go; the full check is back)",
	11239:  "same as 147662 (and still so with the ids: narad_mut_noforwarddedupe is caught here; 147662's run changed with them)",
	574:    "voters in a decommission seed grown from one node: node 1 was forgotten, and the spare, told only of the initial voter, never found the cluster (a node started later is told of every member, as an operator's -peers would)",
	740:    "invariant 4 in a forget seed: node 1 moved a partition to node 3 and still held its copy (the release waits for the new owner to serve) when node 3 was forgotten; the forget gave the partition back to node 1 under a new epoch, and node 1 went on from its old copy's offsets, writing other records at offsets node 3 had delivered (a forget's reassignment to a node holding an older copy now removes that copy first: core/node markIfStale; narad_mut_servestale brings it back)",
	122:    "moves: once a destination told a new move of its partition from the one it copied (2986), it ended the old copy but started the new one only at the next change of its replica, and after the heal none came (syncMoves now ends copies before it starts them)",
	240:    "invariant 2 in a forget seed, a false alarm of the first try at 2119's fix: the model took the forget's reassigned partitions from its own owners, stale after moves, missed one, and counted its records (lost by the forget, as forgets lose them) as owed. The model now reads the owners the applying replica showed just before the forget",
	2119:   "invariant 9 in a forget seed, a false alarm: the forget's answer came late (its forward outlives the apply), so the model still named the forgotten node's old partition owner while the new one served the epoch-1 records and reopened the partition, which explains the redelivery. The model now learns the forget when a replica applies it (forgetApplied). Found once the logs wrote zeros ahead of their records",
	2986:   "moves: a move stayed copying 60 s after the heal. Its destination applied an abort and a new start of the same move (same members, same epoch) in one batch, so its copy of the aborted move went on as the new one's, with the freeze asked and applied before the abort; it never asked again. The destination now tells moves apart by the index of the StartMove that began each (meta.Move.Started); narad_mut_moveinstance brings it back. Found once the logs wrote zeros ahead of their records",
	3806:   "invariant 2: 29 messages stayed in WALs because a move stayed frozen for ever. Its source, empty at offset 0 (a copy of an empty partition), restarted and reopened the empty log at its epoch's base 2^41; the destination's copy, opened at 0, fetched nothing that could bring it to 2^41, so it never imported or cut over (a copy now starts again when its source is empty past its end: copyBelowEmptySource; narad_mut_emptysourcecopy brings it back). Found once the logs wrote zeros ahead of their records",
	3764:   "vacuous: 23 messages answered 202 but 18 deliveries (a forget gave up some) when the fault phase ended; the phase stretched only while too few messages were answered, and now also while too few were delivered (stepsLeft)",
	500773: "invariant 11, a false alarm: a node whose replica lagged sent a commit to the decommissioned node, stopped for good, after the heal; the simulated network kept that connection open for ever, so the commit waited for its 30 s timeout, where io/peernet's idle timeout ends it after 10 s (the simulator now ends the connections to a node down that long: peersIdle)",
	378869: "invariant 9 in a move seed: the destination imported the frozen source's acks, the write of them failed (injected EIO) and poisoned the partition, and its reopen recovered a lease manager without them; the destination cut over all the same and delivered an acked record again (it now fetches and imports the acks again when the lease manager that took them is gone; narad_mut_importlost brings it back). Found once spread consumes cancelled their other parts",
	410124: "invariant 9, a false alarm in a move seed: the destination's process ended after copying, its replica applied the cutover in its next process, which served the copy without telling the simulator (OnPartitionMoved came only from the process that copied), so a record whose lease ended with the move was counted as delivered under a live lease (a process now reports every cutover it holds that it did not carry out; found once spread consumes cancelled their other parts)",
	665768: "a panic (slice bounds) in a move seed: the destination asked for the freeze and fetched in the same step, the proposal's answer came first and cleared the copy's one busy flag, a second fetch went out, and its answer replaced the runs while the first answer's run was committing (a copy now counts what it has in flight)",
	8865:   "invariant 2 in a forget seed: a misdirected write left node 2's commit frame of partition 4 (epoch 1, offset 2^40+60) whole in the torn tail of its log of partition 2 (epoch 0); recovery took it as R4, offsets 127 to 2^40+59 a hole, and three messages committed after it were never delivered (consumes lease the hole's offsets, fail to read them and release them, for ever). Partition log frames are now tagged with their partition (core/plog format 2)",
}

func TestRegressionSeedsWithUsers(t *testing.T) {
	runRegressionSeeds(t, regressionSeedsWithUsers, func(*Options) {})
}

func TestShortSweep(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ { // make sim sweeps more, without the race detector
		res := Run(Draw(seed))
		if res.Violation != nil {
			t.Errorf("seed %d: %v\n%s", seed, res.Violation, Draw(seed))
		}
		if res.Stats.Acked == 0 || res.Stats.Delivered == 0 {
			t.Errorf("seed %d did no work: %+v", seed, res.Stats)
		}
	}
}

func TestSameSeedSameTrace(t *testing.T) {
	a, b := Run(Draw(2)), Run(Draw(2))
	if a.Trace != b.Trace {
		t.Fatalf("seed 2: trace %s then %s", a.Trace, b.Trace)
	}
}

// Over seeds 1-100 every fault class of the cluster simulator fires somewhere and every
// checker does real work.
func TestFaultsAndCheckersCovered(t *testing.T) {
	sim.CoverageSweep(t, os.Getenv, func(seed uint64, c *sim.Coverage) error {
		res := Run(Draw(seed))
		c.AddMap("fault", res.Stats.Faults())
		c.AddMap("checker", res.Stats.Checkers())
		return res.Violation
	})
}

// A seed whose clients get less than the floors done fails as vacuous.
func TestVacuousSeedFails(t *testing.T) {
	o := Draw(1)
	o.Steps = 50 // too few events for the topic to exist
	res := Run(o)
	if res.Violation == nil || !strings.HasPrefix(strings.SplitN(res.Violation.Error(), ": ", 2)[1], "vacuous:") {
		t.Fatalf("a 50-event run: %v", res.Violation)
	}
}
