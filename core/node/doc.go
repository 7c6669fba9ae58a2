// Package node is one broker node's core: it composes the ingress WAL (core/wal), the
// metastore replica (core/meta), the dispatcher (core/dispatch), and the partition logs
// (core/plog) and consume leases (core/lease) of the partitions the node owns. It is a
// deterministic state machine, driven like each of its parts: events in, actions out.
//
// # Driving it
//
//	n := node.New(cfg, rng.New(seed))
//	n.Open(now)
//	loop (the shell's, under one mutex; see io/nodeshell):
//		client request:  n.Produce / n.Consume / n.Ack / n.CreateTopic / … (now, token, …)
//		disk completion: n.DiskDone(now, result)
//		timer:           n.Tick(now)                 // at n.NextDeadline()
//		peer message:    n.Receive(now, from, body)
//		failed send:     n.SendFailed(now, to, body) // a Ready message that never left
//		connection end:  n.PeerReset(now, peer)
//		rd := n.Ready()
//		rd.Ops        -> the disk shell (any order, concurrently)
//		rd.Responses  -> the waiting clients, by token
//		rd.Messages   -> peers (best effort; a send that fails is told back)
//		rd.Failed     -> stop; a restart recovers from the disk
//
// Every input ends with collect: each machine's Ready is drained and routed to the
// others until nothing moves. A WAL ack hands the record to the dispatcher; a dispatcher
// commit goes to the partition's log (commitDurable); a commit's success advances the
// partition's high-watermark in its lease manager and wakes parked consumes; the
// dispatcher's checkpoint goes to the WAL. Disk ops of all machines share one id space:
// the node renames each op and routes its completion back.
//
// # Operations in flight
//
// Everything else the node waits for is one entry of one table (inflight.go), under one
// id, with a typed purpose: a produced record in the WAL, a write or a barrier in the
// metastore (a client's, a follower's, a forward's, the dispatcher's, the catch-up's), a
// partition log read or commit, a request the node made of itself, and a request to a
// peer (a call, or a dispatcher commit sent to its owner; sent with the id plus a base
// drawn per process). An answer is routed by looking its id up, and an id answered as
// another purpose is an assertion failure. Entries end in three places only: their
// answer, expireInFlight (a call's deadline, a remote commit's memory) and failPeer (a
// peer restarted or its connection ended). The flows read top to bottom, each in its
// file: produce.go and producesync.go, consume.go, commits.go, forward.go, calls.go.
//
// # Requests
//
// Produce resolves the partition from the local replica only (pin, FNV-1a of the key, or
// round-robin: over the partitions this node owns with Config.ProduceLocalPartitions)
// and appends every message to the WAL in one group commit; the answer waits
// for all of them to be durable. The accept path never looks at liveness (the seed's
// pure-hash accept): a record for a dead owner's partition is accepted, and the
// dispatcher reroutes it to a live sibling (dispatch/reroute.go). ProduceSync is the
// synchronous internal path (producesync.go, for producers in the process): no WAL, each
// partition's share committed at its owner before the answer, and partitions picked by
// the seed's pickProducePartition, which walks forward past partitions whose owner
// membership marks dead. Consume takes leases on the lowest available offsets of
// the topic's partitions (rotating the starting partition), reads the records back from
// the partition logs and answers with receipt handles; with nothing available it parks
// until a commit, a nack or an expiry, or its wait ends. Ack settles, extends or releases
// a lease by its handle. Topic requests go through the metastore (raft) and are answered
// once applied locally; on a follower they are forwarded to the leader first
// (forward.go), each under an id (member, process nonce, request id) that the metastore's
// state applies once at most, whatever leader a late copy of the request reaches.
//
// In a cluster each partition is served by its owner only. A consume or ack reaching
// another node is routed (route.go, routeserve.go): a pinned consume to the partition's
// owner; a consume of any partition to this node's partitions and every other live owner
// at once, answered by the first with records (records leased for an answer already
// given are released at once, and the owners that have not answered are told to end
// their parts, wire.ConsumeCancel, so that they lease nothing more for it); an ack to the
// owners its handles name. Peer requests are
// calls with ids and deadlines (calls.go); Hellos and duplicate requests, hello.go.
//
// # Partition moves
//
// A partition moves between members as the metastore's move entries say (move.go, the
// destination; moveserve.go, the source): the destination removes what an earlier owner
// left, copies the source's batches with CommitCopy (FetchRequest, fdatasync, read-back)
// while the source serves, asks for the freeze once close, copies the frozen tail and the
// ack state, and asks for the cutover; it serves the partition under the next epoch once
// its replica applied it. A frozen source takes no commit (retried), no lease, no ack and
// no replay of the partition; a source whose replica gives the partition away drops its
// copy once the new owner answers for it with every record it held. A new process of the
// destination that finds the move frozen keeps what an earlier process copied and aborts
// the move (that process may have asked for the cutover); a partition that becomes this
// node's another way (a forget) is emptied before it is served, and so is an older copy
// this node still holds of a partition a forget gives back to it (a source whose release
// was pending, markIfStale). Leases end with a move; acks move with it.
//
// Each member's heartbeats carry the marks (epoch, oldest offset, high watermark) of the
// partitions it owns; the leader passes its table of them on to the followers with its
// raft messages once a heartbeat interval (marks.go), so a forget, on any member, answers
// the records it gives up at last contact.
//
// Partitions are opened lazily, on their first commit, consume or stats request; work
// that arrives while one recovers waits for it.
//
// # Readiness and reclaimed files
//
// Readiness (catchup.go) is what /readyz answers: once the metastore replica is
// recovered and a leader is known, the node asks the leader for a read barrier; it is
// ready once its replica has applied up to the leader's commit index that barrier saw
// (retried CatchUpRetryNs after a failure; sticky once reached). Requests are served per
// IsReady, which does not wait for it.
//
// The reclaimer (core/reclaim, driven from reclaim.go) removes the partition directories
// of incarnations the replica deleted: a pass at start and after every topic delete the
// replica applies; a directory is dead only when its incarnation is deleted at or below
// the applied index, not open here, with no disk op in flight (else a pass follows their
// completion).
//
// # Failures
//
// A failed fsync in the WAL or the metastore fails the node: the shell stops and a
// restart recovers every machine from the disk. A failure of one partition's log or ack
// files fails that partition alone (poison.go): its verified prefix stays readable,
// commits to it are refused (the dispatchers reroute its records), and it is reopened
// from the disk, cut back to that prefix, after PartitionReopenNs (doubling up to
// PartitionReopenMaxNs). A WAL write that finds the device full fails nothing: its
// produces are answered ErrNoSpace (507), nothing of them written (core/wal nospace.go).
// Nothing acknowledged is lost: the WAL keeps every record until
// the dispatcher's checkpoint passes it, and the checkpoint passes a record only after
// its partition commit was fsynced and verified.
package node
