package nodeshell

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/peernet"
)

// Bounds of the peer link.
const (
	// outMessagesMax and outBytesMax bound one peer's queue of messages waiting for its
	// sender. Past either, a new message is dropped and reported to the core as a failed
	// send: peers are best effort (raft and the heartbeats repeat, a failed remote commit
	// is sent again after the dispatcher's backoff), and a peer that is down must not make
	// the node hold every commit meant for it.
	outMessagesMax = 4096
	outBytesMax    = 64 << 20
	// peerCheckIntervalNs spaces the comparisons of the members' addresses with those the
	// transport was given (a map built under the shell's mutex): members change rarely.
	peerCheckIntervalNs = 100_000_000
)

// Cluster configures a shell's peer transport (io/peernet): the node exchanges the core's
// messages (raft, heartbeats, remote commits) with the other members over QUIC.
type Cluster struct {
	Listen string            // UDP address the transport listens on, e.g. the HTTP host:port
	Secret []byte            // the cluster secret, the same on every member
	Peers  map[uint64]string // the initial members' addresses by node id (this node's is ignored)
	Logger *slog.Logger      // nil: slog.Default()
}

// OpenCluster is Open for a member of a cluster: the shell also owns a transport on
// cl.Listen, sends the core's messages to peers after every step, feeds what peers send
// into the core, and tells the transport the members' addresses as the metastore learns
// them. The node's id is cfg.Meta.ID (meta.DefaultID when 0); the address it heartbeats
// (cfg.Addr, what peers dial) is the transport's when empty.
func OpenCluster(root string, cfg node.Config, cl Cluster) (*Shell, error) {
	id := cfg.Meta.ID
	if id == 0 {
		id = meta.DefaultID
	}
	h := &peerHandler{}
	tr, err := peernet.Listen(peernet.Config{NodeID: id, Listen: cl.Listen, Secret: cl.Secret, Peers: cl.Peers, Logger: cl.Logger}, h)
	if err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		cfg.Addr = tr.Addr()
	}
	m := newMetrics()
	s, err := open(root, cfg, m, newPeerLink(tr, m), nil)
	if err != nil {
		return nil, errors.Join(err, tr.Close())
	}
	h.s.Store(s) // after the node opened: a message that came earlier was dropped
	return s, nil
}

// peerHandler feeds what peers send into the shell's core, and tells it when a
// connection to a peer ended (node.PeerReset: what it sent over it may be lost).
type peerHandler struct{ s atomic.Pointer[Shell] }

func (h *peerHandler) OnMessage(from uint64, body []byte) {
	if s := h.s.Load(); s != nil {
		s.step(func(now int64) { s.node.Receive(now, from, body) })
	}
}

func (h *peerHandler) OnPeerReset(peer uint64) {
	if s := h.s.Load(); s != nil {
		s.step(func(now int64) { s.node.PeerReset(now, peer) })
	}
}

// errNoRequests: the core sends only one-way messages.
var errNoRequests = errors.New("nodeshell: peer requests are not served")

func (h *peerHandler) OnRequest(context.Context, uint64, []byte) ([]byte, error) {
	return nil, errNoRequests
}

// peerLink carries the core's outbound messages: one queue and one sender goroutine per
// peer, so that a step never waits on the network (a peer that is down holds a write up
// to io/peernet's SendTimeout) and one slow peer does not hold back the others.
type peerLink struct {
	tr      *peernet.Transport
	metrics *metrics
	shell   *Shell        // set by open before the first step: told of failed sends
	done    chan struct{} // closed by close: the senders stop
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	queues map[uint64]*outQueue

	// Under the shell's mutex: the addresses last given to the transport.
	applied     map[uint64]string
	nextCheckNs int64
}

func newPeerLink(tr *peernet.Transport, m *metrics) *peerLink {
	return &peerLink{tr: tr, metrics: m, done: make(chan struct{}), queues: map[uint64]*outQueue{}}
}

// outQueue is one peer's messages waiting for its sender.
type outQueue struct {
	mu    sync.Mutex
	msgs  [][]byte
	bytes int
	wake  chan struct{} // capacity 1: a token when msgs became non-empty
}

// enqueue queues msgs for their peers, in order; it never blocks. It returns the
// messages dropped because their peer's queue is full: they failed at the sender, and
// the caller tells the core (reportFailed) once it released the shell's mutex.
func (l *peerLink) enqueue(msgs []node.Outbound) (full []node.Outbound) {
	for _, m := range msgs {
		q := l.queue(m.To)
		if q == nil {
			l.metrics.peerMessages.WithLabelValues("dropped").Inc()
			continue
		}
		q.mu.Lock()
		over := len(q.msgs) >= outMessagesMax || q.bytes+len(m.Body) > outBytesMax
		if !over {
			q.msgs = append(q.msgs, m.Body)
			q.bytes += len(m.Body)
		}
		q.mu.Unlock()
		if over {
			l.metrics.peerMessages.WithLabelValues("dropped").Inc()
			full = append(full, m)
			continue
		}
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return full
}

// reportFailed tells the core that msgs failed at the sender (node.SendFailed): a remote
// commit among them fails at once, and the dispatcher sends it again after its backoff
// instead of waiting for the commit timeout. Not once the link is closing.
func (l *peerLink) reportFailed(msgs []node.Outbound) {
	s := l.shell
	select {
	case <-l.done:
		return
	default:
	}
	if s == nil || len(msgs) == 0 {
		return
	}
	s.step(func(now int64) {
		for _, m := range msgs {
			s.node.SendFailed(now, m.To, m.Body)
		}
	})
}

// queue returns peer to's queue, starting its sender on first use; nil once closed.
func (l *peerLink) queue(to uint64) *outQueue {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	q := l.queues[to]
	if q == nil {
		q = &outQueue{wake: make(chan struct{}, 1)}
		l.queues[to] = q
		l.wg.Add(1)
		go l.send(to, q)
	}
	return q
}

// send is peer to's sender: it sends what its queue holds, in order, until close. A
// failed send (no connection to the peer yet, a stream reset, a write that timed out) is
// counted and reported to the core, which fails the commit or call it carried at once.
func (l *peerLink) send(to uint64, q *outQueue) {
	defer l.wg.Done()
	for {
		select {
		case <-q.wake:
		case <-l.done:
			return
		}
		q.mu.Lock()
		batch := q.msgs
		q.msgs, q.bytes = nil, 0
		q.mu.Unlock()
		for _, b := range batch {
			select {
			case <-l.done:
				return
			default:
			}
			result := "sent"
			if err := l.tr.Send(to, b); err != nil {
				result = "failed"
				l.reportFailed([]node.Outbound{{To: to, Body: b}})
			}
			l.metrics.peerMessages.WithLabelValues(result).Inc()
		}
	}
}

// updatePeers gives the transport the members' addresses that changed since it was last
// given them, at most every peerCheckIntervalNs. It runs under the shell's mutex, so that
// concurrent steps apply changes in the order the core made them.
func (l *peerLink) updatePeers(n *node.Node, nowNs int64) {
	if nowNs < l.nextCheckNs {
		return
	}
	l.nextCheckNs = nowNs + peerCheckIntervalNs
	addrs := n.PeerAddrs()
	if maps.Equal(addrs, l.applied) {
		return
	}
	for id, addr := range addrs { //narad:unordered (each entry is set on its own)
		if l.applied[id] != addr {
			l.tr.SetPeer(id, addr)
		}
	}
	l.applied = addrs
}

// close stops the senders (what they hold is dropped) and the transport; when it returns,
// no goroutine of either is left and no peer message reaches the core any more.
func (l *peerLink) close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	close(l.done)
	err := l.tr.Close() // a sender in the middle of a Send fails at once
	l.wg.Wait()
	return err
}
