// Package metasim runs a cluster of metastore replicas (core/meta, etcd raft with 3 or 5
// voters) in one goroutine, on simulated disks and the simulated network of sim/simnet,
// with crashes, disk faults, message loss, duplicates, reordering, stale duplicates and
// partitions (symmetric and one-way), and checks invariant 6 of DESIGN.md:
//
//   - at most one leader per term, over the whole run;
//   - every replica applies the same sequence: whenever two replicas report the state at
//     the same raft index (after an entry, or after installing the leader's snapshot),
//     the term and the topics are identical, crashes and re-application included;
//   - committed entries are never lost: after the fault phase the cluster heals (faults
//     off, links restored, every replica up) and must, within HealBoundNs of simulated
//     time, have a leader, apply a fresh entry on every replica, and hold every topic a
//     proposal was answered for.
//
// In move seeds (moves.go) the clients also drive partition moves through the log
// (start, freeze, cut over, abort), and every replica's state after every apply is held
// to one owner per partition epoch over the whole run (check "moves").
//
// In forget seeds (forget.go) one replica stays down long enough to be marked dead, the
// clients forget it (meta.ForgetMember), and after the heal every other replica must hold
// it forgotten, not as a member and outside its raft configuration (check "forget"). A
// replica that knows no leader heartbeats every initial voter, and a member relays the
// heartbeat of a node outside the configuration to its leader, as the node layer does.
//
// Clients propose topic creations with unique names to random replicas; a follower
// answers ErrNotLeader and the client tries another replica later, a timeout or a crash
// leaves the proposal ambiguous (retried under the same name, so ErrExists counts as
// success). Everything is drawn from the seed; raft's election jitter, which etcd raft
// draws from crypto/rand.Reader, comes from the seed too, so runs serialize on that
// reader (one run at a time per process).
package metasim
