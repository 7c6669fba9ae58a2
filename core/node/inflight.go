package node

import (
	"maps"
	"slices"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/wire"
)

// Everything the node has in flight with another machine or party is one entry of one
// table, named by one id: a produced record waiting for the WAL, a write or barrier in the
// metastore, a read or commit of a partition log, a request the node made of itself. Each
// entry says what it is for (its purpose), so an answer is routed by looking its id up,
// and an id answered as something it is not is a programmer error (asserted). Ids carry
// idTag, which the shell's client tokens never do: an internal request's Response is told
// from a client's by its token alone.

// idTag marks the node's own ids (Ready's Responses to a token with it are internal).
const idTag = 1 << 62

// purpose is what an entry of the table waits for.
type purpose uint8

const (
	forWALAppend       purpose = iota + 1 // a produced record, until the WAL has it (walAppend)
	forProposal                           // a client's write, until the metastore applies it
	forPeerProposal                       // a follower's write this leader proposed for it
	forForwardBarrier                     // a forwarded write, until the local replica has it
	forDispatchBarrier                    // the dispatcher's barrier (its own token)
	forCatchUp                            // the catch-up barrier (catchup.go)
	forRead                               // a consume's read of a partition log (readRef)
	forCommit                             // a partition log commit (its jobs wait in p.inflight)
	forInternal                           // a request the node made of itself (then)
	forCall                               // a request to a peer, until answered or given up (done)
	forRemoteCommit                       // a dispatcher commit sent to its partition's owner
	forFetchRead                          // a read of a partition log for a move's fetch (fetch)
	purposeEnd
)

// entry is one operation in flight. Only the fields of its purpose are set.
type entry struct {
	purpose  purpose
	client   uint64       // forProposal: the client's token
	wal      walAppend    // forWALAppend
	proposal peerProposal // forPeerProposal
	forward  forwardOp    // forForwardBarrier
	dispTok  uint64       // forDispatchBarrier: the dispatcher's token
	read     readRef      // forRead
	part     partKey      // forCommit: the partition committing
	then     func(nowNs int64, r Response)
	peer     uint64                            // forCall, forRemoteCommit: the peer that must answer
	deadline int64                             // forCall: given up then
	done     func(nowNs int64, m wire.Message) // forCall; m nil: no answer in time
	remote   remoteCommit                      // forRemoteCommit
	fetch    *fetchServe                       // forFetchRead (part: the partition read)
}

// inflightTable holds the entries by id, and the ids by purpose: the scans by purpose (a
// deadline, a peer's entries, a partition's reads) visit only the entries of that purpose,
// never every produced record waiting for the WAL.
type inflightTable struct {
	next      uint64
	entries   map[uint64]entry
	byPurpose [purposeEnd]map[uint64]struct{}
	// peerBase is added to an id sent to a peer (a call's, a remote commit's): drawn at
	// random per process, so that an answer meant for an earlier process matches nothing.
	peerBase uint64
}

func newInflightTable() inflightTable {
	t := inflightTable{entries: map[uint64]entry{}}
	for p := range t.byPurpose {
		t.byPurpose[p] = map[uint64]struct{}{}
	}
	return t
}

// add files e under a fresh id and returns the id.
func (t *inflightTable) add(e entry) uint64 {
	assert.That(e.purpose > 0 && e.purpose < purposeEnd, "node: an in-flight entry with no purpose")
	t.next++
	id := idTag | t.next
	assert.That(t.next < idTag, "node: the in-flight id space is exhausted")
	t.entries[id] = e
	t.byPurpose[e.purpose][id] = struct{}{}
	return id
}

// take removes and returns the entry with id, which must be for p if it is there: an
// answer may come for an entry given up before (a dropped partition, an expired call).
func (t *inflightTable) take(id uint64, p purpose) (entry, bool) {
	e, ok := t.entries[id]
	if !ok {
		return entry{}, false
	}
	assert.That(e.purpose == p, "node: an answer routed to an in-flight entry of another purpose")
	delete(t.entries, id)
	delete(t.byPurpose[p], id)
	return e, true
}

// purposeOf is the purpose of the entry with id, 0 when there is none.
func (t *inflightTable) purposeOf(id uint64) purpose { return t.entries[id].purpose }

// ids returns the ids of the entries for p that match, in id order (the order they were
// filed in).
func (t *inflightTable) ids(p purpose, match func(*entry) bool) []uint64 {
	var out []uint64
	for _, id := range slices.Sorted(maps.Keys(t.byPurpose[p])) {
		if e := t.entries[id]; match == nil || match(&e) {
			out = append(out, id)
		}
	}
	return out
}

// any reports whether an entry for p matches.
func (t *inflightTable) any(p purpose, match func(*entry) bool) bool {
	for id := range t.byPurpose[p] { //narad:unordered (any match)
		if e := t.entries[id]; match(&e) {
			return true
		}
	}
	return false
}

// timedIDs returns the ids of the calls and remote commits (the entries that end by time),
// in the order they were filed in.
func (t *inflightTable) timedIDs() []uint64 {
	ids := slices.Sorted(maps.Keys(t.byPurpose[forCall]))
	ids = append(ids, slices.Sorted(maps.Keys(t.byPurpose[forRemoteCommit]))...)
	slices.Sort(ids)
	return ids
}

// wireID is the request id sent to a peer for the entry with id.
func (t *inflightTable) wireID(id uint64) uint64 {
	assert.That(t.peerBase != 0 && id&idTag != 0, "node: a wire id for no peer request")
	return t.peerBase + id&^idTag
}

// peerEntry returns the id of the entry for p, sent to peer, that a peer's wire id names.
// A wire id of an earlier process, of an entry given up, or of another peer names none.
func (t *inflightTable) peerEntry(wireID uint64, p purpose, peer uint64) (uint64, bool) {
	c := wireID - t.peerBase
	if t.peerBase == 0 || wireID <= t.peerBase || c > t.next {
		return 0, false
	}
	e, ok := t.entries[idTag|c]
	return idTag | c, ok && e.purpose == p && e.peer == peer
}

// nextDeadline is the earliest deadline of a call.
func (t *inflightTable) nextDeadline() (int64, bool) {
	var at int64
	for id := range t.byPurpose[forCall] { //narad:unordered (a minimum)
		if e := t.entries[id]; at == 0 || e.deadline < at {
			at = e.deadline
		}
	}
	return at, at != 0
}

// peerID files e, a request to a peer, and returns the id to send it with.
func (n *Node) peerID(e entry) uint64 {
	if n.inflight.peerBase == 0 {
		n.inflight.peerBase = n.rand.Uint64() >> 2
	}
	return n.inflight.wireID(n.inflight.add(e))
}

// expireInFlight is where entries end by time: a call past its deadline is given up (its
// continuation gets nil), and a remote commit sent long enough ago that the dispatcher
// has timed it out and sent its records again is forgotten (a late answer to it then
// matches nothing).
func (n *Node) expireInFlight(nowNs int64) {
	forget := 2 * n.commitTimeout()
	for _, id := range n.inflight.timedIDs() {
		e, ok := n.inflight.entries[id]
		switch {
		case !ok: // ended by a continuation run before it
		case e.purpose == forCall && nowNs >= e.deadline:
			n.inflight.take(id, forCall)
			e.done(nowNs, nil)
		case e.purpose == forRemoteCommit && nowNs-e.remote.sentNs > forget:
			n.inflight.take(id, forRemoteCommit)
		}
	}
}

// failPeer is where entries end by a peer: every call and remote commit sent to it and
// not answered yet fails at once (it restarted, or the connection ended). Calls first,
// then commits, each in id order.
func (n *Node) failPeer(nowNs int64, peer uint64) {
	toPeer := func(e *entry) bool { return e.peer == peer }
	for _, id := range n.inflight.ids(forCall, toPeer) {
		if e, ok := n.inflight.take(id, forCall); ok {
			e.done(nowNs, nil)
		}
	}
	for _, id := range n.inflight.ids(forRemoteCommit, toPeer) {
		if e, ok := n.inflight.take(id, forRemoteCommit); ok {
			n.remoteFailed(nowNs, e.remote)
		}
	}
}
