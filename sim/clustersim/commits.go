package clustersim

import (
	"fmt"

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
}

func newCommitTracker() commitTracker {
	return commitTracker{open: map[commitRef]openCommit{}, holds: map[[2]uint64]commitRef{}, nonces: map[[2]uint64]uint64{}}
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
	}
	u.commits.open[ref] = oc
}

// commitAnswered notes a CommitResponse delivered to node mb: its commit is closed.
func (u *run) commitAnswered(mb *member, body []byte) {
	m, err := wire.Decode(body)
	if resp, ok := m.(wire.CommitResponse); err == nil && ok {
		u.closeCommit(commitRef{epoch: mb.epoch, id: resp.ID})
	}
}

func (u *run) closeCommit(ref commitRef) {
	for _, id := range u.commits.open[ref].msgs {
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
			u.closeCommit(ref)
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
			u.closeCommit(ref)
		}
	}
}

// commitSendFailed mirrors the node: a commit whose send failed at the sender is closed
// (the dispatcher sends its records again after its backoff).
func (u *run) commitSendFailed(mb *member, body []byte) {
	m, err := wire.Decode(body)
	if req, ok := m.(wire.CommitRequest); err == nil && ok {
		u.closeCommit(commitRef{epoch: mb.epoch, id: req.ID})
	}
}

// commitPeerReset mirrors the node: a connection's end closes every open commit the
// process sent to that peer.
func (u *run) commitPeerReset(mb *member, peer uint64) {
	for ref, oc := range u.commits.open { //narad:unordered (closing is order-free)
		if ref.epoch == mb.epoch && oc.to == peer {
			u.closeCommit(ref)
		}
	}
}
