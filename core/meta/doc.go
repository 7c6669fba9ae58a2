// Package meta is the metastore: the topics of the cluster, kept in an etcd raft log
// (go.etcd.io/raft/v3 RawNode, PreVote and CheckQuorum on). A single node runs one voter
// (Config.ID 1, no Voters); a cluster bootstraps every store with the same Config.Voters,
// carries Ready.Messages to the peers named in their To field and feeds what arrives to
// Step. Like every core package it performs no I/O: raft's log and snapshot reach the disk
// through disk.Op actions, and time comes in as nowNs arguments.
//
// # Driving loop
//
//	s := meta.New(meta.Config{Dir: "meta"})
//	s.Open(now)
//	for {
//		rd := s.Ready()
//		for _, op := range rd.Ops { shell.Execute(op) }      // any order, all at once
//		for _, d := range rd.Done { answer(d.Token, d.Topic, d.Err) }
//		for _, b := range rd.Barriers { answerBarrier(b.Token, b.Err) }
//		for _, m := range rd.Messages { transport.Send(m.To, m) } // best effort
//		switch ev := shell.NextEvent(s.NextDeadline()); ev.Kind { // the shell waits, not the core
//		case diskDone: s.DiskDone(ev.Now, ev.Result)
//		case deadline: s.Tick(ev.Now)
//		case request:  s.Propose(ev.Now, ev.Token, ev.Cmd) // or s.Barrier
//		case message:  s.Step(ev.Now, ev.Msg)                // from a peer
//		}
//	}
//
// A proposal is answered only after its entry is durable in raft.log, committed and applied
// on this replica. Only the leader takes proposals (a follower answers ErrNotLeader at once;
// the node layer forwards writes to the leader). Reads (Topic, TopicByID, Topics) serve
// the local replica; Barrier makes a later read see every write answered before it (raft
// ReadIndex, ReadOnlySafe).
//
// A forwarded write is proposed with ProposeForwarded and its ProposalID (the member that
// forwarded it, its process's nonce, the request's sequence, the index its replica had
// applied). The entry carries the id, and the state keeps per member the ids applied for
// its newest process (forwards.go; snapshot field 'forwards'), so a copy of the request
// the network delivers again, to any leader at any time, is refused at its apply on every
// replica alike (ErrDuplicate after a first copy that applied without an error, else
// ErrStale) and changes nothing.
//
// # Members, the controller and partition owners
//
// The state holds the members besides the topics. The leader runs the controller on Tick
// (controller.go) from the heartbeats the node layer passes to Heartbeat (node id and
// address; a node heartbeats the leader it knows every 500 ms, and the leader its own
// replica). A node heard that is not a member, or moved to another address, joins
// (JoinMember, alive); a dead member heard again is marked alive (SetMemberAlive true);
// a live member silent for DeadAfterNs (default 5 s) is marked dead, but only once the
// leader has led for DeadAfterNs (the heartbeats went to its predecessor before). The
// controller proposes only once it has applied its whole durable log and an entry of its
// term. Liveness so changes only through the log: every replica agrees on who is alive
// at every index. JoinMember may also be proposed directly (the simulator's clients do).
//
// The controller also shapes the raft configuration (promote.go). A joiner enters as a
// learner; the leader promotes live learners whose match is within PromoteLagMax entries
// of its commit, up to VotersTarget voters (3 from three members, 5 from five), several
// at once in one ConfChangeV2 (joint consensus, left automatically); in the same change
// it removes forgotten members (ForgetMember, forget.go: a dead member given up, its
// partitions reassigned empty under a new epoch) and makes voters past the target
// learners (four members keep three voters). A change is made only if the healthy voters
// of the configuration it leads to are a quorum of it (the quorum guard; ErrGuard names a
// refusal). A joiner outside the configuration knows no
// leader and heartbeats the initial voters; a member that hears it relays the heartbeat
// to the leader it knows (the node layer, which takes a relayed heartbeat only from a
// member and only for a node outside the configuration), so a leader that was a
// promoted learner still hears it.
// A member is decommissioned (DecommissionMember, decommission.go): it drains (takes no
// new partitions, is never promoted), and once it owns no partition and its node holds
// nothing undelivered, the node proposes RemoveMember, which leaves a tombstone like a
// forget's, marked removed; the controller then takes it out of the configuration. A
// leader whose removal is applied hands its leadership to a healthy voter first (raft's
// TransferLeader). The leader checks the guards (partitions while partitions cannot
// move, last, voters, quorum) on a current view before it proposes.
// Partition moves (moves.go) are entries too: StartMove, FreezeMove, CutOverMove (the
// destination owns the partition under the next epoch, at the same offsets) and
// AbortMove; a move ends with its topic or with a forget of either end. Nothing proposes
// them yet: the copy between nodes comes next.
// A member whose state was wiped and that restarts under its old id stops with
// ErrLostState (forget it, then join under a new id) instead of stepping the leader's
// messages into an empty log.
//
// A topic's partitions get owners when they are created (CreateTopic, and PatchTopic for
// the partitions it adds): round-robin over the members alive at that entry, starting at
// the entry's index modulo their number; draining members take none while another live
// member does not drain. With no member (a single node that never
// joined) partitions have no owner and are local. Owners(topic id) reads them; they are
// kept in the snapshot with the members.
//
// # Files
//
// Dir holds two files. Every frame is one of core/frame (drawn there once):
//
//	crc32c u32 | length u32 | format u8 | body[length]
//
// with the CRC over length, format and body (little endian throughout).
//
//	raft.log  one frame per persisted Ready, format 1:
//	          flags u8 (bit 0: hard state present) | term u64 | vote u64 | commit u64 |
//	          entry count u32 | entries: index u64 | term u64 | type u8 | len u32 | data
//	snap      exactly one frame, format 1, whose body is the applied state (topics, next
//	          incarnation id) at an index and term, with raft's ConfState.
//
// Each Ready is one write of one frame, one fdatasync and a read-back that compares the
// frame with what was written (verify.go); its messages, proposals' answers and applied
// entries are released only after the read-back matched. A frame the disk silently damaged
// is so never trusted: the store fails, and the damaged frame is the log's tail, which
// recovery drops (row L3). snap.tmp and raft.log.tmp are read back the same way before
// they are renamed into place. A failed write or sync
// makes the store sticky-failed (ErrFailed) until the node restarts.
//
// Every SnapshotEveryEntries applied entries, the state is written to snap.tmp, synced,
// renamed over snap, the directory synced, then raft.log is rewritten the same way without
// the entries the snapshot covers. A crash at any step leaves either the old snap with the
// full log, or the new snap with a log whose early entries it covers (row L6); a received
// snapshot may also leave a log whose entries after it are a suffix it replaced (row L8).
//
// A follower too far behind gets the leader's snapshot (MsgSnap). It is installed through
// the same steps (snap.tmp, sync, read-back, rename, directory sync) before raft's storage
// and the topics take it, then raft.log is rewritten with the Ready's HardState and
// entries, and only then are the Ready's messages sent and its committed entries applied.
// The leader is told a snapshot was sent as soon as it hands the message out
// (ReportSnapshot finish): messages are best effort, and a lost snapshot only means the
// follower is probed and sent another one.
//
// # Recovery table
//
// Open lists Dir, reads snap, then raft.log frame by frame; a file that fails its check is
// re-read up to ReadRetriesMax times (read corruption) before the rows below apply. Each
// row taken is reported in Recovery.Decisions.
//
//	S1  no snap                                   start from the empty state
//	S2  snap passes its check                     start from it
//	S3  snap fails its check                      fail (ErrCorrupt): snap was synced before rename
//	L1  no raft.log                               no entries
//	L2  frames pass their checks                  keep them
//	L3  damage with no valid frame after it       torn tail: drop it
//	L4  damage with a valid frame after it        fail (ErrCorrupt): synced data is damaged
//	L5  entry indexes not contiguous              fail (ErrCorrupt)
//	L6  entries at or below the snapshot index    skip them
//	L8  the log's entry at the snapshot index     drop the entries after it: a received
//	    has another term than the snapshot        snapshot replaced them (raft's restore)
//	L7  terms go backwards, or the hard state's   fail (ErrCorrupt)
//	    commit is past the log or its term below
//	B   nothing recovered at all                  bootstrap Config.Voters (default: ID alone)
//	J   nothing recovered, ID not in Voters       start empty: a joiner; the leader adds it
//	                                              as a learner when it hears its heartbeat,
//	                                              then promotes it (promote.go)
//	W   always, after the rows above              rewrite raft.log from the decision, then
//	                                              start raft with Applied = snapshot index
//
// Raft re-applies the committed entries after the snapshot through its first Readys, so
// the topics after recovery are the snapshot plus every committed entry.
package meta
