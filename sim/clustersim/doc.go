// Package clustersim runs a cluster of 3 or 5 whole nodes (core/node: ingress WAL,
// metastore replica, dispatcher, partition logs, leases) in one goroutine, each on its
// own simulated disk, joined by the simulated network of sim/simnet, with clients that
// produce to any node and consume from any node. Faults: node crashes (the machine's:
// the disk applies its crash model), disk faults, and every network fault of
// DESIGN.md section 4 (loss, duplicates, delay and reordering, stale duplicates,
// symmetric and one-way partitions).
//
// Some seeds have one long outage once the topic exists: a node stays down for 3 to 10
// s while the others keep a quorum (no second crash, no cuts meanwhile), so the
// controller marks it dead and the dispatchers reroute its partitions' records.
//
// What it checks today:
//   - invariant 3: every delivered message was produced, byte for byte, and a definitely
//     refused produce is never delivered;
//   - invariants 1 and 5 on the durable images (every 500 events, at each crash and at
//     the end): every message answered 202 is in a CRC-valid partition log on some node
//     or in some node's WAL at or above its durable checkpoint, byte for byte;
//   - invariant 4: an offset a node delivered stays in its durable log with the same
//     bytes, and never delivers another message;
//   - invariant 6: at most one metastore leader per term, over the whole run, and every
//     replica at the same applied index has the same term there and the same state;
//   - the dispatcher's "nothing recommitted meanwhile": within one process, no message is
//     sent in a remote commit while an earlier commit holding it is unanswered and not
//     timed out (commits.go);
//   - invariant 2 after healing (faults off, every node up, links restored): every
//     message answered 202 is delivered within HealBoundNs of simulated time;
//   - linearizability of the clients' history (porcupine, package invariants);
//   - liveness: simulated time keeps moving (a livelock at one instant is a violation).
//
// Consumers ask random nodes: consumes and acks are routed to the partitions' owners.
//
// In half the seeds a second topic is deleted and created again under load (churn.go):
// its records go the discard way (the leader-confirmed stale-replica defense), and its
// messages are held to invariant 3 only, since a 202 there may be followed by a delete.
//
// In half the seeds every node's clock is off the simulated time by its own offset (up to
// 20 s between nodes) and drifts by up to 2,000 ppm (clock.go): a node sees only its own
// clock, the clients' history uses simulated time.
package clustersim
