// Package sim is Narad's deterministic simulator: the in-memory stand-ins for the shells
// (disk, and later network and clock) that let many core nodes run in one goroutine under a
// single seed, with faults injected from that seed. Same seed and same calls give the same
// run, byte for byte: every random draw comes from a core/rng stream handed in by the
// caller, nothing reads the clock, and no map is iterated in an order that reaches an
// output or a draw.
//
// The simulated disk (Disk, an implementation of core/disk.FS) is the executable form of
// the disk contract of DESIGN.md section 3. Its model — page cache versus durable image,
// dirty bytes, what a failed fdatasync loses, the directory journals, and exactly what a
// crash keeps, drops, tears or garbles — is documented in disk.go; the faults added for
// issue 11 (EIO on every mutating op, a device that stays full until space is freed,
// misdirected writes, bit rot at rest, process crashes that keep the page cache, writes
// in flight at a crash) in disk_faults.go.
//
// The page cache is distinct from the device: a plain read returns what was written, and
// only a device read (disk.Op.Device) sees a corrupted, lost or misdirected write or
// pages a failed sync lost. The WAL's group read-back, commitDurable's read-back, plog
// recovery's tail check and the metastore's read-back read the device, and so does WAL
// recovery's scan (after a process crash the cache still shows pages a failed sync
// lost; walsim seed 20), which also syncs the WAL directory every time (cluster seed 7);
// the mutation
// narad_mut_readbackcache serves the first three from the cache and the node simulator
// catches it (invariant 1).
//
// The simulators draw every fault of disk_faults.go except the random bit rot of RotProb
// (it stays 0 in their options): Narad keeps one copy of a record (its WAL, then its
// partition log), so rot of the only copy of an acknowledged record is loss that no check
// of the core can prevent. The WAL simulator places rot instead (walsim/rot.go, Disk.RotAt):
// at a crash, one bit of one acknowledged, undispatched record's durable frame flips; that
// record leaves the model, and recovery must keep every other one (row R6 of core/wal).
//
// # Planted bugs and the checks that catch them
//
// Each bug below sits behind a build tag (mutation_<name>_on.go in its package) and is
// listed in the Makefile's MUTATIONS as tag:simulation:seeds:check. make mutation builds
// narad-sim with the tag and counts the bug caught only when the named check reports
// verdict=violation within that many seeds; another check, a clean sweep, a build failure
// or a crash of narad-sim fails the target.
//
//	tag (narad_mut_…)  package    the bug                                           sim      check
//	ackearly           wal        appends answered before their fdatasync           wal      invariant 1
//	skipaftertorn      wal        recovery drops the record after a damaged one     wal      invariant 1
//	skipreadback       plog       commits published without the read-back           node     invariant 4
//	ckptearly          dispatch   checkpoint over commits still in flight           node     invariant 1
//	hwbeforesync       plog       high watermark moved before the fdatasync         node     invariant 4
//	trusttail          plog       recovery trusts the newest frame unverified (R11) node     invariant 4
//	readbackcache      wal, plog  read-backs served from the page cache             node     invariant 1
//	nacksettle         lease      nack and expiry settle instead of release         node     invariant 9
//	leasestale         lease      an old lease's handle still honoured              node     invariant 9
//	acksnotdurable     lease      the ack flush writes nothing, reports acks durable node    invariant 9
//	keyoffbyone        node       keyed partition choice off by one                 node     invariant 8
//	statshw            node       stats' high watermark counts unsynced commits     node     linearizability
//	rerouteinflight    dispatch   reroute forgets commits still in flight           cluster  dispatch
//	discardnoconfirm   dispatch   discard without the leader's confirmation         cluster  invariant 1
//	ckptpastskip       dispatch   checkpoint past a skipped record                  cluster  invariant 1
//	nocarnation        dispatch,  the incarnation check removed at commit           cluster  invariant 8
//	                   node
//	redispatchall      dispatch   recovery ignores the durable skip-set             cluster  invariant 10
//	reroutealive       dispatch   3 failed commits reroute though the owner lives   cluster  dispatch
//	sendfailsilent     node       a failed send not reported to the dispatcher      cluster  invariant 11
//	foreignconsume     node       a routed consume delivers another incarnation's   unit     (test)
//	                              records (no seed in the sweeps makes that lag,
//	                              see below)
//	ownernocheck       node       a partition's owner serves a routed consume or    cluster  access
//	                              ack without checking the user's grant
//	cachestale         io/auth    a cached credential survives its user's new       cluster  access
//	                              password (or the user's delete)
//	readyearly         node       /readyz trusts the replica's own commit index     cluster  readiness
//	reclaimlive        node       the reclaimer removes any partition directory     cluster  reclaim
//	                              not open (a live topic's not yet reopened)
//	poisonnode         node       a partition's failure fails the whole node        cluster  poison
//	noreopen           node       a failed partition's reopen is put off for ever   node     poison
//	                              (partitions still failed after the heal; with
//	                              the traces before issue 13's in-flight table,
//	                              invariant 2 reported it first, and again in
//	                              seeds 20-32 once the logs wrote zeros ahead:
//	                              seed 33 reports poison first)
//	reopentail         plog       a reopened log serves frames past the verified    node     invariant 10
//	                              end (a failed commit's, sent again: two copies;
//	                              seeds 150-250, first at 186; unit test too)
//	nospacefatal       wal        a write that finds no space fails the WAL (and    node     nospace
//	                              the node) instead of refusing produces
//	applyearly         meta       entries applied before they are committed         meta     invariant 6
//	keepforgotten      meta       a forgotten member is never removed from the      meta     forget
//	                              raft configuration (it keeps its vote); in the
//	                              cluster a removed one neither (decommission,
//	                              seed 6)
//	notombstone        meta       a forgotten id may join again (its tombstone      meta     forget
//	                              dropped by the join)
//	cutoversameepoch   meta       a move's cutover keeps the partition's epoch:     meta     moves
//	                              two owners hold one epoch (first at seed 3)
//	nopromote          meta       learners are never made voters (a cluster grown   cluster  voters
//	                              from one node keeps one voter)
//	epochzero          node       a partition a forget reassigned starts its new    cluster  invariant 4
//	                              epoch at offset 0, naming records the old copy
//	                              had at the same offsets (first at seed 6)
//	norelay            node       a joiner's heartbeats are not relayed to a        cluster  voters
//	                              leader it does not know (a promoted learner):
//	                              it is never seen, never a voter (seeds
//	                              160-170, first at 165; 554 before the moves
//	                              changed the traces)
//	readctx            node       every process numbers its barriers alike: a late  unit     (test)
//	                              read answer of an earlier process makes a new
//	                              one ready behind the leader (cluster seed 966
//	                              drew it once; TestLateReadAnswerOf…)
//	noforgottenstop    node       a forgotten node that comes back is not told to   unit     (test)
//	                              stop and lingers with its stale copies
//	                              (TestForgetDeadMember; clustersim's forgotten
//	                              node never returns)
//	nodemote           meta       voters past VotersTarget never made learners:     cluster  voters
//	                              four members after a forget keep four voters
//	                              (regression seed 209)
//	dropreassigned     node       a record for a partition a forget reassigned is   cluster  invariant 2
//	                              discarded though a live WAL held it (the
//	                              given-up model still owes it; first at seed 6)
//	ackunanswered      node       a routed ack whose owner never answered is        cluster  invariant 9
//	                              answered OK (invariant 9, narrowed for late
//	                              and reopened acks, still bites; first at seed 2)
//	noownstop          node       a node whose own replica applies its forget goes  unit     (test)
//	                              on (TestForgottenNodeBehindAOneWayCutStops)
//	noquorumguard      meta       a member's removal skips the quorum guard: a      unit     (test)
//	                              change may leave the healthy voters without a
//	                              quorum (TestDecommissionRefusedByTheQuorumGuard)
//	removeearly        node       a draining node proposes its removal with records cluster  invariant 2
//	                              it answered 202 still in its dispatcher, and
//	                              stops with them (first at seed 13; unit test
//	                              TestDecommissionedNodeDeliversWhatItAccepted)
//	removedtakes       node       a removed node that still leads the metastore     cluster  invariant 2
//	                              takes produces and stops with them in its WAL
//	                              (seed 1488; found at 2669, then at 7552, 158
//	                              and 1004: the cancels, the forwards' ids, the
//	                              moves and the consume cancels changed each run)
//	drainplace         meta       a draining member takes new partitions: the       cluster  decommission
//	                              spare drains owning a churn topic's (seed 139;
//	                              73 until the forwards' ids changed its run)
//	cutoverunverified  node       a move's destination asks for the cutover once    cluster  invariant 2
//	                              the freeze applied, without the frozen tail or
//	                              the acks (seed 1: the tail's records are never
//	                              delivered; before the moves' fixes of the third
//	                              speed session invariant 9 saw an acked record
//	                              come again first)
//	releaseearly       node       a move's source drops its copy and removes its    cluster  reclaim
//	                              files once it holds the move frozen, before the
//	                              cutover is committed (first at seed 1)
//	frozendrop         node       a frozen partition answers the commits sent       cluster  invariant 1
//	                              during the freeze OK without writing them
//	                              (first at seed 1)
//	servestale         node       a partition a forget gives back to a node that    unit     (test)
//	                              still holds its older copy (a move's source
//	                              whose release was pending) is served from that
//	                              copy, other records landing at offsets the
//	                              forgotten owner delivered (TestForgetGivesBack…;
//	                              seed 740 drew it until the logs wrote zeros
//	                              ahead, no seed of 1-4000 or 500000-502500 since)
//	importlost         node       a move's destination whose partition was reopened cluster  invariant 9
//	                              after it imported the acks (a failed ack write)
//	                              cuts over without them (seed 378869)
//	moveinstance       node       a move's destination takes a new move of the      cluster  moves
//	                              partition (same members, same epoch) for the one
//	                              it copies after an abort and a new start applied
//	                              together: the freeze is never asked again (2986)
//	emptysourcecopy    node       a move's copy opened at offset 0 goes on fetching cluster  invariant 2
//	                              from a source that reopened its empty log at its
//	                              epoch's base: the move stays frozen for ever and
//	                              the WALs keep what they hold (3806)
//	zeroskept          plog       a cut leaves the zeros it removed on the books,   unit     (test)
//	                              so later commits grow the file at every sync
//	                              (TestCutLaysZerosAgain; a cost, not a wrong
//	                              answer: no simulator check can see it)
//	zeroheader         plog       recovery takes a zeroed frame header for space    unit     (test)
//	                              never written (R12) and ends the segment there,
//	                              losing the frames after it (TestRecoveryR4Zeroed…;
//	                              node seeds 1-150 did not draw a zeroed frame in
//	                              the middle of a segment)
//	walzeroheader      wal        the same in the WAL's row R10, whose records      unit     (test)
//	                              after it are lost (TestRecoveryR6Zeroed…)
//	sharedreadback     osfs       a device read-back returns the pooled aligned     unit     (test)
//	                              buffer, not a copy: the next read-back of its
//	                              size class overwrites it (TestConcurrentRead…)
//	noconsumecancel    node       a spread consume answered by one owner leaves     unit     (test)
//	                              its parts parked at the others, which lease
//	                              records for it that the entry node releases
//	                              (TestSpreadConsumeAnsweredCancelsTheOtherOwners;
//	                              the checks see no wrong answer, only waste)
//	localignored       node       Config.ProduceLocalPartitions is ignored: a       unit     (test)
//	                              keyless message goes to any partition
//	                              (TestProduceLocalPartitionsStayOnTheirNode; the
//	                              simulators do not set the option, and no check of
//	                              theirs tells partitions apart)
//	novotersguard      meta       a forget may leave fewer than 3 voters while 3    unit     (test)
//	                              or more members remain (TestForgetGuards; no
//	                              seed has a dead learner to reach it)
//	loststate          meta       a wiped member under its old id steps the         unit     (test)
//	                              leader's heartbeat into raft, which panics
//	                              (TestWipedMemberStopsAndTheClusterGoesOn; no
//	                              simulator wipes a directory yet)
//	noforwarddedupe    meta       a copy of a forwarded proposal is applied again   unit     (test)
//	                              (TestForwardedCopyAppliedOnce; cluster seeds
//	                              147662 and 11239 drew the late copy before the
//	                              moves changed their runs, none of 1-2000 does)
//
// Masked (kept, not listed in MUTATIONS): trustsync (core/wal: a failed fdatasync is
// ignored and its appends answered). The group's device read-back now sees the pages the
// failed sync lost and fails the WAL before anything is answered, so no invariant breaks
// in wal seeds 1-200: the second defense hides the first bug.
//
// foreignconsume needs a spread consume during the churn topic's delete and create,
// entered on a node whose replica lags the owner's. Cluster seed 108502 drew that until
// the simulator's traces changed with the catch-up barrier and the reclaimer (issue 13);
// no seed of 1-2000 draws it. Its check is the unit test
// TestStaleReplicaDeliversNoRecordsOfAnotherIncarnation, which builds the lag on purpose
// (Makefile MUTATION_TESTS: the test must fail with the tag); 108502 stays a regression
// seed (narad-sim -sim cluster-nousers runs it as drawn before the simulator had users).
//
// ownernocheck and cachestale are caught by the cluster simulator's access checks
// (clustersim/users.go): the first when an owner whose replica applied a revocation or a
// delete before the entry node's serves a routed request made under the old grant (14 of
// cluster seeds 1-100 make that lag, the first at seed 1); the second when a node takes a
// stale client's old password after its replica applied the new one (29 of seeds 1-100,
// the first at seed 1). cachestale is a shell bug (io/auth): the simulator drives the
// real Authenticator of each node process, with a cheap hasher in place of bcrypt.
//
// trusttail needs a process crash between a commit's write and its fdatasync, with that
// write corrupted on its way to the device: random crashes and random write faults almost
// never met there (uncaught over node seeds 1-100), so the node simulator places that
// crash (nodesim/incommit.go, Options.CrashInCommitProb) and seed 10 catches it. Since
// the logs write zeros ahead of their records, seed 10 reports invariant 2 first (records
// never delivered: the trusted bad tail stalls its partition); seed 41 is the first whose
// first report is invariant 4, and the mutation check runs it.
package sim
