// Package clustersim runs a cluster of 3 or 5 whole nodes (core/node: ingress WAL,
// metastore replica, dispatcher, partition logs, leases) in one goroutine, each on its
// own simulated disk, joined by the simulated network of sim/simnet, with clients that
// produce to any node and consume from any node. Faults: node crashes (the machine's:
// the disk applies its crash model), disk faults, and every network fault of
// DESIGN.md section 4 (loss, duplicates, delay and reordering, stale duplicates,
// symmetric and one-way partitions, sends that fail at the sender).
//
// Some seeds have one long outage once the topic exists: a node stays down for 3 to 10
// s while the others keep a quorum (no second crash, no cuts meanwhile), so the
// controller marks it dead and the dispatchers reroute its partitions' records.
//
// In half the outage seeds the node is forgotten once marked dead (forget.go): it never
// comes back, its partitions restart under a new epoch on live members, and only the
// messages it alone held are given up (no longer owed to invariant 2); every check
// below holds across the forget.
//
// In a quarter of the seeds a spare node starts once the main topic exists (so it owns
// none of its partitions), joins while the faults go on, takes produces, and is then
// decommissioned (decommission.go): it drains, delivers what it accepted, proposes its
// own removal and stops for good. In some of these seeds the decommission is cancelled
// at once, racing the removal, and asked again. Nothing is given up; the check `decommission` holds
// it removed from every replica and their configurations after the heal, and never
// taking partitions while it drains (its own move away first).
//
// Partitions move (moves.go): the nodes' metastore controller moves them to a member
// that joins (the spare), away from a draining one, and after a leader change when
// uneven; in half the seeds a client also asks for moves and aborts at random while the
// faults go on. A move keeps every record at its offset, so invariants 1, 3, 4 and the
// porcupine model hold across it as they are (the copy counts as a verified copy once
// durable at its destination); leases end with a move (a cause of redelivery) and acks
// move with it. The check `moves`: one node commits under each partition epoch, and
// after the heal every move ends within MovesBoundNs. A fault phase that did less than
// the work floor by its step budget goes on, up to four budgets (run.go, stepsLeft).
//
// Faults start once the main topic exists (before, a crash or a cut could keep a member
// from being listed alive, and the topic from ever being made: seeds 7, 35, 36 and 109
// once produced nothing). In 5-node clusters a network change may be a 2|3 split; in
// some seeds clocks step forward and back (clock.go).
//
// What it checks:
//   - invariants 3 and 8, the exact model (model.go): every delivery and replay is held
//     to its produce: bytes and key, its topic, an incarnation whose create was sent
//     before the produce was answered, and its pin or its key's FNV-1a partition unless
//     a reroute or a walk past a dead owner recorded since its produce (the core reports
//     them: dispatch.Config.OnReroute, node.Config.OnWalk) leads there; a definitely
//     refused produce is never delivered;
//   - invariants 9 and 10 (leases.go): while a lease is live (allowing for drift and
//     steps) no other delivery takes its record unless it was nacked or its owner
//     crashed; an ack answered OK is followed by a redelivery only after a crash of the
//     owner within the ack-flush window (or a crash of the node that owned it at the
//     ack, after its disk damaged the partition's ack files following the ack:
//     sim.Disk.Damage; the damaged frame fails its CRC); a settle or extend of a surely live
//     lease is answered OK; a message at a second record needs a failed or timed-out
//     commit holding it, a copy of its commit delivered to a restarted owner, or a crash
//     of its accepting node within dispatch.RedispatchBoundNs widened by the clock steps
//     made since the produce (invariants.RedispatchExplains), or a crash of its accepting
//     process after it rerouted records of the message's partition (the skip-set names a
//     home partition's done records only up to its first record not done, and a rerouted
//     record stays not done until its new owner answers). Duplicates are counted by cause;
//   - invariants 1 and 5 on the durable images (every 500 events, at each crash and at
//     the end): every message answered 202 is in a CRC-valid partition log of its own
//     topic incarnation on some node, or in some node's WAL at or above its durable
//     checkpoint, byte for byte;
//   - invariant 4: a record delivered stays in its durable log with the same bytes, and
//     never delivers another message;
//   - invariant 6: at most one metastore leader per term, over the whole run, and every
//     replica at the same applied index has the same term there and the same state;
//   - the dispatcher's "nothing recommitted meanwhile": within one process, no message is
//     sent in a remote commit while an earlier commit holding it is unanswered and not
//     timed out (commits.go); and a reroute moves records off a partition only when the
//     rerouting node's replica marks its owner dead (model.go, onReroute);
//   - invariant 2 after healing (faults off, every node up, links restored): every
//     message answered 202 is delivered within HealBoundNs of simulated time;
//   - linearizability (linearize.go): porcupine over invariants.PartitionHistory: reads
//     by deliveries and replays, replays that found nothing, and high watermarks read
//     by a stats client (GetTopic), per partition of each incarnation;
//   - vacuous: a run with fewer than ackedFloor messages answered 202 or deliveredFloor
//     deliveries fails;
//   - liveness: simulated time keeps moving (a livelock at one instant is a violation).
//   - access (users.go, access.go; in most seeds, Options.Users): the clients are users
//     the admin keeps changing under load (grants revoked and restored, passwords changed,
//     users deleted and made again). A node takes a password only if its replica holds
//     its hash at that instant, and never refuses one it holds; a request it authorizes
//     has the grant on its replica; a partition's owner serves a routed consume or ack
//     made for a user only if its own replica granted it when the request arrived, and
//     refuses it (403) only if not; a produce refused at the gate is never delivered.
//   - readiness (readiness.go): a process answers ready (/readyz) the first time only
//     with its metastore replica at or past the highest index any replica had applied
//     when it started;
//   - reclaim (reclaim.go): a partition directory removed belongs to an incarnation no
//     replica holds at or past the remover's applied index (never the main topic's), and
//     after the heal no node keeps a directory of an incarnation its replica deleted
//     (within invariants.ReclaimBoundNs).
//   - poison (poison.go): a node never fails for one partition's failure; a partition is
//     reopened only after an op on its files failed on that node's disk since its last
//     reopen or the process start; a reroute while the owner lives follows such a failure
//     at the owner; after the heal no partition stays failed (invariants.ReopenBoundNs).
//     A reopen explains a redelivery (its leases are gone) and an ack lost with it.
//   - nospace: a node never fails for its ingress WAL finding the device full (FillProb,
//     NoSpaceProb): produces are refused (507, a definite refusal) until a write fits. The
//     operator frees a device full for invariants.FullNsMax; a crash while the WAL's
//     checkpoint writes found no space explains a second copy (redispatch-checkpoint-stalled).
//   - voters (voters.go; Options.Nodes 1 in some seeds: a cluster grown from one node):
//     after the heal every replica's raft configuration reaches meta.VotersTarget voters,
//     all of them members, within VotersBoundNs.
//
// The crash schedule skips a crash while no up node follows an up metastore leader, so
// that raft gets the time to elect one (a seed that never elects exercises nothing).
//
// Stats count each fault class that fired and the work each checker did (Faults,
// Checkers); a test holds seeds 1-100 to every class and every checker.
//
// Mutation narad_mut_nocarnation (the incarnation check removed at commit: the
// dispatcher and both commit paths take the topic by name) is caught by invariant 8.
//   - invariant 11 after healing: every message answered 202 is consumable (in a durable
//     partition log, or delivered) within HealLivenessNs (15 s) of the heal's start;
//   - liveness: simulated time keeps moving (a livelock at one instant is a violation).
//
// Failed sends and connections (the 31 s stall a chaos run of real processes found). The
// nodes talk over simnet's connections, one per pair: a process that starts gets new
// ones, each up after a delay drawn up to ConnectMaxNs (1 s at most, io/peernet's RedialMax),
// and in some seeds a send fails at the sender by a drawn stream reset (SendFailProb).
// A send that fails at the sender delivers nothing, and the node is told at once
// (node.SendFailed), as io/nodeshell tells the core when io/peernet's Send fails; when a
// connection ends the processes at both ends are told (node.PeerReset), as io/peernet tells
// the shell. A remote commit so failed is sent again after the dispatcher's backoff (1
// s), not after its commit timeout (30 s in half the seeds). A message lost in flight
// (a drop, a cut) tells its sender nothing: QUIC loses a message only with its
// connection, and the real transport reports that connection's end, which the heal
// stands for by restarting every link (both ends told). A node that stays down (removed,
// forgotten, in an outage) has its links ended every 10 s while it is down, as
// io/peernet's idle timeout ends them (links.go peersIdle: cluster seed 500773, a commit
// to the removed node sent after the heal). So after the heal no commit
// waits for the commit timeout, and the true bound is the chain of waits HealLivenessNs
// lists (heal.go): a restart's recovery, connections up (1 s), a raft election (about 2
// s), a discard-confirming barrier lost before the heal (the metastore's 10 s request
// timeout), the dispatcher's backoffs (to an owner alive: failed commits never reroute), its linger
// and a partition commit; 15 s. A record leased to a consume whose
// answer was lost is consumable all the same: it waits for its lease's visibility
// timeout to be delivered again (invariant 9's business).
//
// Consumers ask random nodes: consumes and acks are routed to the partitions' owners.
//
// In half the seeds a second topic is deleted and created again under load (churn.go):
// its records go the discard way (the leader-confirmed stale-replica defense), so a 202
// there is no promise of delivery, but every delivery from it is held to the model.
//
// In half the seeds every node's clock is off the simulated time by its own offset (up to
// 20 s between nodes) and drifts by up to 2,000 ppm (clock.go): a node sees only its own
// clock, the clients' history uses simulated time.
package clustersim
