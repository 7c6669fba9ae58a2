package clustersim

import (
	"fmt"

	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/core/wire"
	"github.com/narad/narad/invariants"
)

// The dispatcher's promise that the seed calls "nothing recommitted meanwhile": within
// one process, a record is sent in a new commit only once the commit holding it was
// answered or timed out. The simulator sees every remote commit on the network and
// checks it (commits to the node's own partitions do not cross the network).

// commitRef names one remote commit: the sending process and its request id.
type commitRef struct {
	epoch uint64
	id    uint64
}

type openCommit struct {
	sender   *member
	to       uint64
	deadline int64 // on the sender's clock, as its dispatcher counts
	msgs     []uint64
}

// commitTracker holds the remote commits sent and neither answered nor timed out.
type commitTracker struct {
	open   map[commitRef]openCommit
	holds  map[[2]uint64]commitRef // (epoch, message id) -> the open commit holding it
	nonces map[[2]uint64]uint64    // (epoch, peer) -> the nonce of the peer's last Hello
	// retried: messages of a commit that closed without an OK answer (timed out, failed,
	// or its owner restarted): it may have been committed, and is sent again.
	retried map[uint64]bool
	// deliveredTo: (sender, request id) -> the receiving process its first copy reached;
	// redelivered: messages of a commit whose copy reached a later process of its owner.
	deliveredTo map[[2]uint64]uint64
	redelivered map[uint64]bool
	// committedAt: message -> the owners whose OK answer to a commit holding it arrived.
	committedAt map[uint64]map[uint64]bool
	// localAt: message -> the nodes whose own dispatcher committed it in their own
	// partition (node.Config.OnLocalCommit): done for that dispatcher.
	localAt map[uint64]map[uint64]bool
}

func newCommitTracker() commitTracker {
	return commitTracker{open: map[commitRef]openCommit{}, holds: map[[2]uint64]commitRef{}, nonces: map[[2]uint64]uint64{}, retried: map[uint64]bool{},
		deliveredTo: map[[2]uint64]uint64{}, redelivered: map[uint64]bool{},
		committedAt: map[uint64]map[uint64]bool{}, localAt: map[uint64]map[uint64]bool{}}
}

// onLocalCommit notes the messages node mb's dispatcher committed in its own partition.
func (u *run) onLocalCommit(mb *member, es []plog.Entry) {
	for _, e := range es {
		if id, ok := invariants.MessageID(e.Payload); ok {
			if u.commits.localAt[id] == nil {
				u.commits.localAt[id] = map[uint64]bool{}
			}
			u.commits.localAt[id][mb.id] = true
		}
	}
}

// sent notes a message node mb sends; a CommitRequest must not carry a message that an
// open commit of the same process holds.
func (u *run) commitSent(mb *member, to uint64, body []byte) {
	m, err := wire.Decode(body)
	req, ok := m.(wire.CommitRequest)
	if err != nil || !ok {
		return
	}
	u.expireCommits()
	ref := commitRef{epoch: mb.epoch, id: req.ID}
	oc := openCommit{sender: mb, to: to, deadline: u.nowOf(mb) + u.o.CommitTimeoutNs}
	for _, r := range req.Records {
		id, ok := invariants.MessageID(r.Payload)
		if !ok {
			continue
		}
		if other, held := u.commits.holds[[2]uint64{mb.epoch, id}]; held {
			u.violate(fmt.Errorf("dispatch: node %d sent message %d in commit %d while its commit %d holding it is unanswered and not timed out (recommitted meanwhile)", mb.id, id, req.ID, other.id))
			return
		}
		u.commits.holds[[2]uint64{mb.epoch, id}] = ref
		oc.msgs = append(oc.msgs, id)
		u.oweAgain(id)
	}
	u.commits.open[ref] = oc
	u.stats.CommitChecks++
}

// commitAnswered notes a CommitResponse delivered to node mb: its commit is closed.
func (u *run) commitAnswered(mb *member, body []byte) {
	m, err := wire.Decode(body)
	if resp, ok := m.(wire.CommitResponse); err == nil && ok {
		u.closeCommit(commitRef{epoch: mb.epoch, id: resp.ID}, resp.Code == wire.CodeOK)
	}
}

func (u *run) closeCommit(ref commitRef, ok bool) {
	oc := u.commits.open[ref]
	for _, id := range oc.msgs {
		if !ok {
			u.commits.retried[id] = true
		} else if oc.to != 0 {
			if u.commits.committedAt[id] == nil {
				u.commits.committedAt[id] = map[uint64]bool{}
			}
			u.commits.committedAt[id][oc.to] = true
		}
		if u.commits.holds[[2]uint64{ref.epoch, id}] == ref {
			delete(u.commits.holds, [2]uint64{ref.epoch, id})
		}
	}
	delete(u.commits.open, ref)
}

// expireCommits closes the commits past their timeout (the dispatcher gave up on them).
func (u *run) expireCommits() {
	for ref, oc := range u.commits.open { //narad:unordered (closing is order-free)
		if u.nowOf(oc.sender) >= oc.deadline {
			u.closeCommit(ref, false)
		}
	}
}

// commitHello mirrors the node: a Hello with a new nonce from peer `from` (its process
// restarted) closes every open commit the receiving process sent to it.
func (u *run) commitHello(mb *member, from uint64, body []byte) {
	m, err := wire.Decode(body)
	h, ok := m.(wire.Hello)
	key := [2]uint64{mb.epoch, from}
	if err != nil || !ok || h.From != from || u.commits.nonces[key] == h.Nonce {
		return
	}
	u.commits.nonces[key] = h.Nonce
	for ref, oc := range u.commits.open { //narad:unordered (closing is order-free)
		if ref.epoch == mb.epoch && oc.to == from {
			u.closeCommit(ref, false)
		}
	}
}

// onCommitFailed notes the records of a dispatcher commit that failed or timed out (local
// or remote): they are sent again, and the failed commit may have stored them all the same.
func (u *run) onCommitFailed(recs []wal.Record) {
	for _, r := range recs {
		if id, ok := invariants.MessageID(r.Payload); ok {
			u.commits.retried[id] = true
		}
	}
}

// commitDelivered notes a CommitRequest the network delivers to node mb: one delivered
// again (a duplicate, or a stale copy) to a later process of its owner, which cannot know
// it served the first, may be committed twice. Its messages then have a cause on record.
func (u *run) commitDelivered(mb *member, from uint64, body []byte) {
	m, err := wire.Decode(body)
	req, ok := m.(wire.CommitRequest)
	if err != nil || !ok {
		return
	}
	k := [2]uint64{from, req.ID}
	first, seen := u.commits.deliveredTo[k]
	if !seen {
		u.commits.deliveredTo[k] = mb.epoch
		return
	}
	if first != mb.epoch {
		for _, r := range req.Records {
			if id, ok := invariants.MessageID(r.Payload); ok {
				u.commits.redelivered[id] = true
			}
		}
	}
}

// commitSendFailed mirrors the node: a commit whose send failed at the sender is closed
// (the dispatcher sends its records again after its backoff).
func (u *run) commitSendFailed(mb *member, body []byte) {
	m, err := wire.Decode(body)
	if req, ok := m.(wire.CommitRequest); err == nil && ok {
		u.closeCommit(commitRef{epoch: mb.epoch, id: req.ID}, false)
	}
}

// commitPeerReset mirrors the node: a connection's end closes every open commit the
// process sent to that peer.
func (u *run) commitPeerReset(mb *member, peer uint64) {
	for ref, oc := range u.commits.open { //narad:unordered (closing is order-free)
		if ref.epoch == mb.epoch && oc.to == peer {
			u.closeCommit(ref, false)
		}
	}
}
