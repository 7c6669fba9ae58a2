package peernet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	stdnet "net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// Limits and timings.
const (
	SecretBytesMin = 16
	AuthTimeout    = 5 * time.Second  // a connection must authenticate within this
	HandlerTimeout = 30 * time.Second // a request's handler runs at most this long
	SendTimeout    = time.Second      // a one-way message's write gives up after this
	RedialMin      = 50 * time.Millisecond
	RedialMax      = time.Second
)

// Errors of the transport.
var (
	ErrNoConnection = errors.New("net: no connection to the peer")
	ErrClosed       = errors.New("net: transport closed")
)

// RemoteError is the error a peer's request handler returned, as text.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return "net: peer answered: " + e.Msg }

// Config configures a Transport.
type Config struct {
	NodeID uint64            // this node, never 0
	Listen string            // UDP address to listen on, e.g. "127.0.0.1:0"
	Secret []byte            // the cluster secret, at least SecretBytesMin bytes
	Peers  map[uint64]string // node id -> address; SetPeer changes it later
	Logger *slog.Logger      // nil: slog.Default()
}

// Handler receives what peers send. Both methods may be called concurrently.
type Handler interface {
	// OnMessage takes a one-way message. body is the handler's to keep.
	OnMessage(from uint64, body []byte)
	// OnRequest answers a request; an error goes back as a RemoteError. ctx ends when the
	// transport closes or after HandlerTimeout.
	OnRequest(ctx context.Context, from uint64, body []byte) ([]byte, error)
}

// ResetHandler is a Handler that also wants to know when a connection to a peer ends
// (closed, timed out, reset by the peer's new process, or replaced by a new one). What
// was in flight on it may be lost without any Send having failed: a one-way message
// whose write returned was only buffered. OnPeerReset is called after the transport
// dropped the connection, never under its lock.
type ResetHandler interface {
	Handler
	OnPeerReset(peer uint64)
}

// Transport carries messages between cluster nodes over QUIC. See doc.go.
type Transport struct {
	cfg       Config
	h         Handler
	log       *slog.Logger
	udp       *stdnet.UDPConn
	qt        *quic.Transport // one UDP socket for every connection, both ways
	ln        *quic.Listener
	clientTLS *tls.Config
	qconf     *quic.Config
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu      sync.Mutex
	peers   map[uint64]string
	conns   map[uint64]*quic.Conn
	changed chan struct{} // closed and replaced whenever conns changes
	dialing map[uint64]bool
	reqID   uint64
	dials   int // authenticated connections this node dialed (tests)
}

// Listen starts a transport: it listens, dials every peer with a lower id and waits for
// the others to dial it.
func Listen(cfg Config, h Handler) (*Transport, error) {
	if cfg.NodeID == 0 {
		return nil, errors.New("net: node id 0")
	}
	if len(cfg.Secret) < SecretBytesMin {
		return nil, fmt.Errorf("net: the cluster secret must be at least %d bytes", SecretBytesMin)
	}
	serverTLS, clientTLS, err := tlsConfigs()
	if err != nil {
		return nil, err
	}
	qconf := &quic.Config{HandshakeIdleTimeout: AuthTimeout, MaxIdleTimeout: 10 * time.Second,
		KeepAlivePeriod: 2 * time.Second, MaxIncomingStreams: 4096}
	laddr, err := stdnet.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	udp, err := stdnet.ListenUDP("udp", laddr)
	if err != nil {
		return nil, err
	}
	qt := &quic.Transport{Conn: udp, StatelessResetKey: resetKey(cfg.Secret, cfg.NodeID)}
	ln, err := qt.Listen(serverTLS, qconf)
	if err != nil {
		return nil, errors.Join(err, qt.Close(), udp.Close())
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	t := &Transport{cfg: cfg, h: h, log: log.With("node", cfg.NodeID), udp: udp, qt: qt, ln: ln, clientTLS: clientTLS, qconf: qconf,
		peers: map[uint64]string{}, conns: map[uint64]*quic.Conn{}, changed: make(chan struct{}), dialing: map[uint64]bool{}}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go t.acceptLoop()
	for id, addr := range cfg.Peers { //narad:unordered (starts one dialer per peer)
		t.SetPeer(id, addr)
	}
	return t, nil
}

// Addr is the address the transport listens on.
func (t *Transport) Addr() string { return t.ln.Addr().String() }

// SetPeer adds a peer or changes its address (a connection in place stays until it drops).
func (t *Transport) SetPeer(id uint64, addr string) {
	if id == 0 || id == t.cfg.NodeID {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers[id] = addr
	if id < t.cfg.NodeID && !t.dialing[id] && t.ctx.Err() == nil {
		t.dialing[id] = true
		t.wg.Add(1)
		go t.dialLoop(id)
	}
}

// Close stops the transport: connections close, requests in flight fail, and every
// goroutine it started has returned when Close does.
func (t *Transport) Close() error {
	t.cancel()
	err := t.ln.Close()
	t.mu.Lock()
	for _, c := range t.conns { //narad:unordered (closes all)
		_ = c.CloseWithError(errCodeClosing, "closing")
	}
	t.mu.Unlock()
	t.wg.Wait()
	return errors.Join(err, t.qt.Close(), t.udp.Close())
}

// conn returns the connection to peer id, if any.
func (t *Transport) conn(id uint64) (*quic.Conn, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[id], t.changed
}

// register makes conn the connection to peer id, closing one it replaces.
func (t *Transport) register(id uint64, conn *quic.Conn) {
	t.mu.Lock()
	old := t.conns[id]
	replaced := old != nil && old != conn
	if replaced {
		_ = old.CloseWithError(errCodeClosing, "replaced")
	}
	t.conns[id] = conn
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
	if replaced {
		t.peerReset(id)
	}
}

func (t *Transport) unregister(id uint64, conn *quic.Conn) {
	t.mu.Lock()
	ended := t.conns[id] == conn
	if ended {
		delete(t.conns, id)
		close(t.changed)
		t.changed = make(chan struct{})
	}
	t.mu.Unlock()
	if ended {
		t.peerReset(id)
	}
}

// peerReset tells a ResetHandler that the connection to peer id ended (not once the
// transport is closing: nothing waits for an answer then).
func (t *Transport) peerReset(id uint64) {
	if rh, ok := t.h.(ResetHandler); ok && t.ctx.Err() == nil {
		rh.OnPeerReset(id)
	}
}

// waitConn waits, within ctx, for a live connection to peer id (one that has ended is
// dropped at once rather than when its serving loop notices).
func (t *Transport) waitConn(ctx context.Context, id uint64) (*quic.Conn, error) {
	for {
		c, changed := t.conn(id)
		if c != nil && c.Context().Err() == nil {
			return c, nil
		}
		if c != nil {
			t.unregister(id, c)
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w %d: %w", ErrNoConnection, id, ctx.Err())
		case <-t.ctx.Done():
			return nil, ErrClosed
		}
	}
}
