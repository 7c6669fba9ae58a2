package peernet

import (
	"context"
	"fmt"
	stdnet "net"
	"time"

	"github.com/quic-go/quic-go"
)

// One connection per peer pair: the node with the higher id dials, the other accepts (any
// peer that proves the secret, whether it was given as a peer or not). A node that joins
// later takes a higher id than the members it knows from its -peers list, so it can reach
// them before they learn its address. The dialer redials with backoff whenever the
// connection is lost; the acceptor only waits.

func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	for {
		conn, err := t.ln.Accept(t.ctx)
		if err != nil {
			return
		}
		t.wg.Add(1)
		go t.serveInbound(conn)
	}
}

// serveInbound authenticates a connection a peer dialed, then serves it. Any peer that
// proves the secret is accepted, whether this node was told of it or not: a peer may
// learn this node's address before this node learns its (from the metastore's members,
// or a -peers list that names only some nodes), and this node answers it over the
// connection it dialed.
func (t *Transport) serveInbound(conn *quic.Conn) {
	defer t.wg.Done()
	id, err := t.acceptAuth(conn)
	if err != nil {
		t.log.Warn("peer refused", "remote", conn.RemoteAddr().String(), "err", err)
		_ = conn.CloseWithError(errCodeAuth, "authentication failed")
		return
	}
	t.serveConn(id, conn)
}

func (t *Transport) acceptAuth(conn *quic.Conn) (uint64, error) {
	ctx, cancel := context.WithTimeout(t.ctx, AuthTimeout)
	defer cancel()
	st, err := conn.AcceptStream(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: no auth stream: %v", ErrAuth, err)
	}
	defer func() { _ = st.Close() }() // the auth stream: its answer is read or failed
	_ = st.SetDeadline(time.Now().Add(AuthTimeout))
	id, err := checkProof(conn, t.cfg.Secret, st, roleDialer)
	if err != nil {
		return 0, err
	}
	if id == 0 || id == t.cfg.NodeID {
		return 0, fmt.Errorf("%w: a peer claims node id %d", ErrAuth, id)
	}
	p, err := proof(conn, t.cfg.Secret, t.cfg.NodeID, roleAcceptor)
	if err != nil {
		return 0, err
	}
	if _, err := st.Write(p); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return id, nil
}

// dialLoop keeps a connection to the lower-id peer id.
func (t *Transport) dialLoop(id uint64) {
	defer t.wg.Done()
	backoff := RedialMin
	for t.ctx.Err() == nil {
		conn, err := t.dial(id)
		if err != nil {
			t.log.Debug("dial failed", "peer", id, "err", err)
			select {
			case <-time.After(backoff):
			case <-t.ctx.Done():
				return
			}
			backoff = min(2*backoff, RedialMax)
			continue
		}
		backoff = RedialMin
		t.serveConn(id, conn)
	}
}

func (t *Transport) dial(id uint64) (*quic.Conn, error) {
	t.mu.Lock()
	addr := t.peers[id]
	t.mu.Unlock()
	raddr, err := stdnet.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(t.ctx, AuthTimeout)
	defer cancel()
	conn, err := t.qt.Dial(ctx, raddr, t.clientTLS, t.qconf)
	if err != nil {
		return nil, err
	}
	if err := t.dialAuth(ctx, conn, id); err != nil {
		_ = conn.CloseWithError(errCodeAuth, "authentication failed")
		return nil, err
	}
	t.mu.Lock()
	t.dials++
	t.mu.Unlock()
	return conn, nil
}

func (t *Transport) dialAuth(ctx context.Context, conn *quic.Conn, id uint64) error {
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }() // the auth stream: its answer is read or failed
	_ = st.SetDeadline(time.Now().Add(AuthTimeout))
	p, err := proof(conn, t.cfg.Secret, t.cfg.NodeID, roleDialer)
	if err != nil {
		return err
	}
	if _, err := st.Write(p); err != nil {
		return err
	}
	got, err := checkProof(conn, t.cfg.Secret, st, roleAcceptor)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("%w: dialed node %d, node %d answered", ErrAuth, id, got)
	}
	return nil
}

// serveConn registers an authenticated connection and serves the streams the peer opens
// until the connection ends.
func (t *Transport) serveConn(id uint64, conn *quic.Conn) {
	t.register(id, conn)
	defer t.unregister(id, conn)
	for {
		st, err := conn.AcceptStream(t.ctx)
		if err != nil {
			if t.ctx.Err() != nil {
				// Closing: end the connection now (Close may no longer find it
				// registered), so that the peer learns at once, not at its idle timeout.
				_ = conn.CloseWithError(errCodeClosing, "closing")
			}
			return
		}
		t.wg.Add(1)
		go t.serveStream(id, st)
	}
}
