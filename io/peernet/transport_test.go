package peernet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var secret = []byte("a cluster secret of enough bytes")

type msg struct {
	from uint64
	body string
}

// recorder is a Handler: one-way messages go to a channel; requests are echoed, "fail"
// answers an error, "block" waits for its context.
type recorder struct{ got chan msg }

func (r *recorder) OnMessage(from uint64, body []byte) { r.got <- msg{from, string(body)} }

func (r *recorder) OnRequest(ctx context.Context, from uint64, body []byte) ([]byte, error) {
	switch string(body) {
	case "fail":
		return nil, errors.New("no such thing")
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return append([]byte(fmt.Sprintf("%d:", from)), body...), nil
}

type node struct {
	t   *Transport
	rec *recorder
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// cluster starts n transports (ids 1..n) that know each other, with the given secrets.
func cluster(t *testing.T, secrets ...[]byte) []*node {
	t.Helper()
	nodes := make([]*node, len(secrets))
	for i, s := range secrets {
		rec := &recorder{got: make(chan msg, 1024)}
		tr, err := Listen(Config{NodeID: uint64(i + 1), Listen: "127.0.0.1:0", Secret: s, Logger: quiet()}, rec)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &node{t: tr, rec: rec}
	}
	for i, a := range nodes {
		for j, b := range nodes {
			if i != j {
				a.t.SetPeer(uint64(j+1), b.t.Addr())
			}
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = n.t.Close()
		}
	})
	return nodes
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func expectMsg(t *testing.T, n *node, want msg) {
	t.Helper()
	select {
	case got := <-n.rec.got:
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no message %+v within 5 s", want)
	}
}

func TestMessagesAndRequests(t *testing.T) {
	ns := cluster(t, secret, secret, secret)
	// Requests wait for the connection (1 dials 2 and 3, 2 dials 3).
	for _, p := range [][2]int{{0, 1}, {1, 0}, {0, 2}, {2, 0}, {1, 2}, {2, 1}} {
		from, to := ns[p[0]], uint64(p[1]+1)
		got, err := from.t.Request(ctxFor(t, 5*time.Second), to, []byte("hi"))
		if want := fmt.Sprintf("%d:hi", p[0]+1); err != nil || string(got) != want {
			t.Fatalf("request %d->%d: %q %v, want %q", p[0]+1, to, got, err, want)
		}
	}
	if err := ns[2].t.Send(1, []byte("from 3")); err != nil {
		t.Fatal(err)
	}
	expectMsg(t, ns[0], msg{3, "from 3"})
	if err := ns[0].t.Send(2, []byte("from 1")); err != nil {
		t.Fatal(err)
	}
	expectMsg(t, ns[1], msg{1, "from 1"})
	_, err := ns[1].t.Request(ctxFor(t, 5*time.Second), 3, []byte("fail"))
	var re *RemoteError
	if !errors.As(err, &re) || re.Msg != "no such thing" {
		t.Fatalf("handler error: %v", err)
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf("req-%d", i)
			got, err := ns[2].t.Request(ctxFor(t, 10*time.Second), 2, []byte(body))
			if err != nil || string(got) != "3:"+body {
				t.Errorf("concurrent request %d: %q %v", i, got, err)
			}
		}()
	}
	wg.Wait()
	// Exactly one connection per pair: each node holds two, and only higher ids dialed.
	for i, n := range ns {
		n.t.mu.Lock()
		conns, dials := len(n.t.conns), n.t.dials
		n.t.mu.Unlock()
		if conns != 2 || dials != i {
			t.Errorf("node %d: %d connections, %d dials; want 2 and %d", i+1, conns, dials, i)
		}
	}
}

func TestRequestTimeoutMayHaveBeenApplied(t *testing.T) {
	ns := cluster(t, secret, secret)
	start := time.Now()
	_, err := ns[0].t.Request(ctxFor(t, 300*time.Millisecond), 2, []byte("block"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Fatalf("blocked request: %v after %v", err, time.Since(start))
	}
}

func TestOversizedBodiesRefused(t *testing.T) {
	ns := cluster(t, secret, secret)
	big := make([]byte, BodyBytesMax+1)
	if err := ns[0].t.Send(2, big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("send: %v", err)
	}
	if _, err := ns[0].t.Request(ctxFor(t, time.Second), 2, big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("request: %v", err)
	}
}

// A node without the secret never delivers a message, and requests to it fail.
func TestWrongSecretRefused(t *testing.T) {
	ns := cluster(t, secret, []byte("another secret, not the cluster's"))
	if _, err := ns[0].t.Request(ctxFor(t, time.Second), 2, []byte("hi")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request to an impostor: %v", err)
	}
	if _, err := ns[1].t.Request(ctxFor(t, time.Second), 1, []byte("hi")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request from an impostor: %v", err)
	}
	if err := ns[1].t.Send(1, []byte("hi")); !errors.Is(err, ErrNoConnection) {
		t.Fatalf("send from an impostor: %v", err)
	}
	select {
	case m := <-ns[0].rec.got:
		t.Fatalf("delivered %+v from an impostor", m)
	default:
	}
	for i, n := range ns {
		if c, _ := n.t.conn(uint64(2 - i)); c != nil {
			t.Fatalf("node %d holds a connection to the node with another secret", i+1)
		}
	}
}

// After a peer restarts on the same address, the dialer reconnects.
func TestReconnectAfterRestart(t *testing.T) {
	ns := cluster(t, secret, secret)
	if _, err := ns[0].t.Request(ctxFor(t, 5*time.Second), 2, []byte("a")); err != nil {
		t.Fatal(err)
	}
	addr := ns[1].t.Addr()
	if err := ns[1].t.Close(); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{got: make(chan msg, 16)}
	again, err := Listen(Config{NodeID: 2, Listen: addr, Secret: secret, Logger: quiet(), Peers: map[uint64]string{1: ns[0].t.Addr()}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	ns[1] = &node{t: again, rec: rec} // the cleanup closes it
	// A request on the old connection fails (the new process resets it); the dialer
	// reconnects and a later request goes through, well within the idle timeout.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := ns[0].t.Request(ctxFor(t, time.Second), 2, []byte("b"))
		if err == nil && bytes.Equal(got, []byte("1:b")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer from the restarted peer within 5 s: %q %v", got, err)
		}
	}
}

func TestConfigChecked(t *testing.T) {
	if _, err := Listen(Config{NodeID: 1, Listen: "127.0.0.1:0", Secret: []byte("short")}, &recorder{}); err == nil {
		t.Fatalf("a short secret was accepted")
	}
	if _, err := Listen(Config{NodeID: 0, Listen: "127.0.0.1:0", Secret: secret}, &recorder{}); err == nil {
		t.Fatalf("node id 0 was accepted")
	}
}

// A node that was not told of a peer still accepts it when it proves the secret, and
// reaches it back over that connection: a joiner (higher id) told of a member reaches
// the member before the member learns the joiner's address.
func TestUnknownPeerWithSecretAccepted(t *testing.T) {
	recs := []*recorder{{got: make(chan msg, 16)}, {got: make(chan msg, 16)}}
	one, err := Listen(Config{NodeID: 1, Listen: "127.0.0.1:0", Secret: secret, Logger: quiet()}, recs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = one.Close() })
	two, err := Listen(Config{NodeID: 2, Listen: "127.0.0.1:0", Secret: secret, Logger: quiet(), Peers: map[uint64]string{1: one.Addr()}}, recs[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = two.Close() })
	ns := []*node{{one, recs[0]}, {two, recs[1]}}
	if got, err := two.Request(ctxFor(t, 5*time.Second), 1, []byte("hi")); err != nil || string(got) != "2:hi" {
		t.Fatalf("request 2->1: %q %v", got, err)
	}
	if got, err := one.Request(ctxFor(t, 5*time.Second), 2, []byte("back")); err != nil || string(got) != "1:back" {
		t.Fatalf("request from the node that was not told of its peer: %q %v", got, err)
	}
	if err := one.Send(2, []byte("one way")); err != nil {
		t.Fatal(err)
	}
	expectMsg(t, ns[1], msg{1, "one way"})
}

// A stream whose envelope claims a length over the bound is refused before its body is
// read: the handler never sees it, the stream is reset, and the connection goes on.
func TestOversizeLengthOnLiveStreamRefused(t *testing.T) {
	ns := cluster(t, secret, secret)
	if _, err := ns[0].t.Request(ctxFor(t, 5*time.Second), 2, []byte("up")); err != nil {
		t.Fatal(err)
	}
	conn, err := ns[0].t.waitConn(ctxFor(t, 5*time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	st, err := conn.OpenStreamSync(ctxFor(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var h [headerBytes]byte
	binary.LittleEndian.PutUint32(h[:4], headerBytes-8+BodyBytesMax+1)
	h[8], h[9] = envelopeFormat, kindOneWay
	if _, err := st.Write(h[:]); err != nil {
		t.Fatal(err)
	}
	_ = st.SetReadDeadline(time.Now().Add(5 * time.Second))
	var sre *quic.StreamError
	if _, err := io.ReadAll(st); !errors.As(err, &sre) || !sre.Remote {
		t.Fatalf("reading the refused stream: %v, want a reset by the peer", err)
	}
	st.CancelWrite(0)
	select {
	case m := <-ns[1].rec.got:
		t.Fatalf("delivered %+v from an oversize envelope", m)
	default:
	}
	if got, err := ns[0].t.Request(ctxFor(t, 5*time.Second), 2, []byte("still")); err != nil || string(got) != "1:still" {
		t.Fatalf("request after the refused stream: %q %v", got, err)
	}
}
