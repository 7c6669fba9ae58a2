// Package dispatch is Stage 2 of the produce path (seed/produce-path.md): the per-node
// mover that takes records durable in the ingress WAL to the partitions that own them, and
// tells the WAL how far everything is done (the checkpoint). It is a deterministic state
// machine: no I/O, no clock, no goroutines.
//
// # Driving it
//
//	d := dispatch.New(cfg, catalog, recovery.Checkpoint)
//	for _, r := range recovery.Records { d.Add(now, r) }   // replay what the WAL holds
//	loop:
//		on a WAL ack:          d.Add(now, record)          // in seq order
//		on a commit answer:    d.CommitDone(now, id, err)  // nil: durable and verified
//		on a barrier answer:   d.BarrierDone(now, token, err)
//		on a timer:            d.Tick(now)                 // at d.NextDeadline()
//		then:                  d.Pump(now); rd := d.Ready()
//		                       send rd.Commits to owners (commitDurable), rd.Barriers to the
//		                       metastore (ReadIndex), rd.Checkpoint to the WAL
//
// # How it works
//
// Records at or above the checkpoint are held in seq order. Those below the lookahead
// horizon (checkpoint + LookaheadWindows × window) are admitted into buckets, one per
// (topic, incarnation, partition). Each pass sends every idle bucket's leading records as
// one commit (at most CommitBytesMax, at least one record), at most one commit in flight
// per bucket and FanoutMax in flight overall. A commit's records are marked done only when
// the owner answers that they are durable and verified; a failure puts them back and
// backs the bucket off for FailureBackoffNs. The checkpoint is the first seq not done: a
// stuck partition holds the checkpoint, but not the others (skip-set, not head-of-line
// blocking), and the horizon bounds how far past it the dispatcher runs. Nothing done is
// ever sent again within a process.
//
// # The skip-set survives a crash
//
// The seed keeps the skip-set (committedAhead) in memory only, so a crash re-committed
// every record above a stuck checkpoint: a node that took produces while a partition
// owner was down delivered all of them twice after its own crash. Narad extends the seed:
// after every pass that changed it, Ready.Skip describes the done records above the
// checkpoint as a wal.Skip, and the WAL writes it with the checkpoint (checkpoint slot
// format 2, core/wal/checkpoint.go), lazily like the checkpoint itself. The description
// is bounded: every home partition (the one a record was accepted for, whatever it was
// rerouted to) with work not done contributes its first seq not done; the
// wal.CheckpointPendingMax lowest are listed, and Skip.Below is the next one's (or one
// past the last record), so every record below Below of an unlisted partition is done.
// Restore hands the recovered Skip to a new dispatcher before the WAL's records are
// added; the records it names are done and never sent again.
//
// What counts as done is what the checkpoint may pass (invariant 5): a record whose
// commit was answered durable, or that was discarded. A commit in flight or failed is
// work, and neither the checkpoint nor the Skip ever names its records.
//
// The bound that follows: after a crash, only records whose commit was answered within
// the last CheckpointSyncIntervalNs (250 ms) before the crash, plus those of commits in
// flight at the crash, may be committed a second time. RedispatchWindowNs states it with
// a margin (RedispatchInFlightMarginNs) for the in-flight commits and the checkpoint's own
// write; a commit whose answer was lost stays in flight until CommitTimeoutNs, which
// RedispatchBoundNs takes into account. invariants.RedispatchExplains checks duplicates
// against it. With more than
// CheckpointPendingMax partitions holding work at once, records above Below are replayed
// too, and so is everything done since the older slot when the newest checkpoint slot is
// damaged at rest: duplicates, never loss.
//
// The window adapts: while commits come out thinner than TargetPerPartition records it
// doubles (up to WindowMax), and it halves back towards BaseWindow when they are far
// fatter. A bucket holding fewer than TargetPerPartition records also lingers: it waits
// until LingerNs (5 ms) after the oldest of them was admitted before it commits, unless
// it reaches the target first. A commit costs the owner one fdatasync and one read-back,
// and the producers' 202s wait only for the WAL, so lingering trades a few milliseconds
// of visibility for several times fewer partition syncs under load. A linger (or a
// backoff) that has ended is not reported by NextDeadline: whatever still holds such a
// bucket (fan-out, a barrier) wakes the dispatcher itself.
//
// # Discarding
//
// A record whose topic incarnation is gone locally (topic absent, recreated under a new
// incarnation id, or an owner answering ErrIncarnation) is not committed. Its bucket asks
// for a barrier: a leader-confirmed read index (ReadIndex; a self-leader goes through the
// same barrier) applied by the local replica. Only after the barrier, with the replica
// caught up and the topic still gone on re-reading, are its records discarded. Anything
// less keeps them for the next pass.
//
// # Rerouting
//
// A partition whose owner membership says is dead has its waiting records moved, at once,
// to a live sibling: the next
// partition of the same topic incarnation whose owner is alive and is another member (the
// seed's availability trade; ordering was never promised). Records whose commit is in
// flight are never moved: the commit's answer or its timeout comes first, so no record is
// ever in two commits at once. A rerouted record keeps its seq; only its partition
// changes, and a crash replays it to its original partition (rerouted again if needed).
// With no live sibling the records wait for their own partition. Failed commits alone
// never reroute: while membership calls the owner alive (a cut between the two, a slow
// disk, a restart within the dead-after bound) the records wait for it, with the
// failure backoff between passes (the seed: "3 passes and membership agrees the owner is
// dead"; a dead owner is known only after DeadAfterNs of silence, more than 3 passes).
//
// An owner that answers a commit ErrPartitionFailed (that one partition failed there and
// waits for its reopen) sends the partition's waiting records to a sibling at once, for
// PartitionFailedHoldNs after the answer: the next partition whose owner is alive and
// that no owner reported failed, the same owner allowed. After the hold a commit tries
// the partition again; a success ends it.
package dispatch
