// Package net is the node-to-node transport (DESIGN.md section 4): QUIC (quic-go) between
// cluster nodes, carrying opaque bodies (core/wire messages) one way or as request and
// response. It is a shell: goroutines, sockets and clocks live here, and the core sees
// only the bodies.
//
// # Use
//
//	t, err := net.Listen(net.Config{NodeID: 1, Listen: ":7943", Secret: s, Peers: peers}, h)
//	t.Send(2, body)                  // one way, best effort (raft messages, heartbeats)
//	resp, err := t.Request(ctx, 2, body) // request/response (remote commits)
//	t.Close()
//
// h.OnMessage and h.OnRequest receive what peers send, concurrently.
//
// # Connections
//
// One QUIC connection per pair of nodes, over one UDP socket per node: the node with the
// higher id dials, the other accepts, so two nodes never race to connect each other. A
// node joining a cluster has a higher id than the members it is told of, so it can dial
// them before they know its address; they answer over that connection. The
// dialer redials with backoff (RedialMin doubling to RedialMax) whenever the connection
// ends; the acceptor waits for it. Send fails at once without a connection (the message is
// dropped; raft retries what matters, and the caller learns it from the error); Request
// waits for one within its context. A Send that returned nil only buffered the message:
// it is lost if its connection ends first, so a handler that implements ResetHandler is
// told whenever a connection to a peer ends (OnPeerReset), and a caller waiting for an
// answer over it gives up then instead of at its own timeout.
// Every message takes a stream of its own (QUIC streams are cheap and independent, so a
// slow large commit does not hold back raft's heartbeats).
//
// A node's QUIC stateless reset key is derived from the cluster secret and its id, so it
// is the same after a restart: the new process resets the connections its peers still hold
// to the old one, and they redial at once instead of waiting for the idle timeout.
//
// # Authentication
//
// TLS 1.3 inside QUIC uses an ephemeral self-signed certificate that nobody verifies.
// Instead, right after the handshake, the dialer opens a stream and sends its node id and
// HMAC-SHA256(cluster secret, TLS exporter "narad peer auth v1" | node id | 'd'); the
// acceptor checks it, then answers the same with its id and 'a', which the dialer checks
// against the id it dialed. The acceptor takes any node id but its own and 0, also one it
// was not told of (it reaches that peer back over this connection). The exporter binds
// the proofs to this TLS session, so they cannot be replayed or relayed. A connection that
// does not authenticate within AuthTimeout is closed and never delivers a message.
//
// # Envelope (on each stream; version 1)
//
//	length u32 | crc32c u32 | format u8 (1) | kind u8 | request id u64 | body
//
// length counts from format to the end of the body; the CRC (Castagnoli) covers the same
// bytes. Kinds: 1 one-way, 2 request, 3 response, 4 error (the handler's error as text).
// A body is at most BodyBytesMax (16 MiB): Send and Request refuse larger ones, and a
// reader refuses a larger length before reading or allocating the body. A reader grows its
// buffer as the body's bytes arrive (from readChunkBytes, doubling), so a peer that claims a
// large body and sends little makes it allocate little.
//
// # Timeouts and what they mean
//
// Request returns an error wrapping the context's (DeadlineExceeded, Canceled) when no
// answer came in time. The peer may still have acted on the request, or may act on it
// later: a caller that retries must tolerate duplicates (remote commits do: delivery is
// at-least-once). A handler runs at most HandlerTimeout; a one-way write gives up after
// SendTimeout.
package peernet
