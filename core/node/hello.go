package node

import (
	"maps"
	"slices"

	"github.com/narad/narad/core/wire"
)

// A peer's process is told apart from its earlier ones by the nonce of its Hello, and its
// requests by their ids: a new process fails at once what was sent to the old one, and a
// request the network delivers twice is served once.

// hellosSent: a new process repeats its Hello with its first heartbeats (connections to
// peers may not be up yet, and messages are best effort); a peer acts on the first.
const hellosSent = 20

// hello tells every other member and initial voter this process started, once the
// metastore recovered: a peer then fails the commits it sent to this node's earlier
// process at once instead of after the commit timeout (they are lost with it, or were
// committed by it: sending them again is a duplicate at most, as after a timeout).
func (n *Node) hello() {
	if n.peers.helloNonce == 0 {
		n.peers.helloNonce = n.rand.Uint64() | 1
	}
	ids := map[uint64]bool{}
	for _, m := range n.meta.Members() {
		ids[m.ID] = true
	}
	for _, v := range n.cfg.Meta.Voters {
		ids[v] = true
	}
	delete(ids, n.meta.ID())
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		n.send(id, wire.Hello{From: n.meta.ID(), Nonce: n.peers.helloNonce})
	}
}

// onHello fails the commits and calls this node sent to an earlier process of the peer
// (a new nonce: a duplicated or late Hello changes nothing).
func (n *Node) onHello(nowNs int64, from uint64, m wire.Hello) {
	if m.From != from || n.peers.nonce[from] == m.Nonce {
		return
	}
	n.peers.nonce[from] = m.Nonce
	n.failPeer(nowNs, from)
}

// peerRequestMemoryMinNs: a peer's request id is remembered at least this long
// (and twice the commit timeout), past any late copy the network may still deliver.
const peerRequestMemoryMinNs = 10_000_000_000

// seenRequest reports whether a request of this kind and id from peer from arrived
// before, and remembers it: the network may deliver a request twice, and serving the copy
// would commit its records twice (or lease records nobody receives, or answer an ack
// "gone" after its first copy settled it). A sender never reuses an id (a retry is a new
// request), so the copy needs no answer of its own.
func (n *Node) seenRequest(nowNs int64, from uint64, kind wire.Kind, id uint64) bool {
	k := [3]uint64{from, uint64(kind), id}
	if _, ok := n.peers.requests[k]; ok {
		return true
	}
	n.peers.requests[k] = nowNs
	return false
}

// forgetPeerRequests forgets the peers' request ids past their memory.
func (n *Node) forgetPeerRequests(nowNs int64) {
	memory := max(2*n.commitTimeout(), peerRequestMemoryMinNs)
	for k, at := range n.peers.requests { //narad:unordered (deleting is order-free)
		if nowNs-at > memory {
			delete(n.peers.requests, k)
		}
	}
}

// peerState is what the node knows of its peers' processes.
type peerState struct {
	helloNonce uint64              // this process's, sent in its Hellos
	hellos     uint64              // Hellos sent so far (hellosSent at most)
	nonce      map[uint64]uint64   // peer -> the nonce of its last Hello
	requests   map[[3]uint64]int64 // (peer, kind, request id) -> when it arrived
}
