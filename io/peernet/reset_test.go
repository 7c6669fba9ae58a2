package peernet

import (
	"testing"
	"time"
)

// resetRecorder is a ResetHandler: the peers whose connection ended go to a channel.
type resetRecorder struct {
	recorder
	resets chan uint64
}

func (r *resetRecorder) OnPeerReset(peer uint64) { r.resets <- peer }

// A ResetHandler is told when a connection to a peer ends (here: the peer closes), and
// a Send without a connection fails at once, so that the caller can tell its core.
func TestPeerResetAndFailedSend(t *testing.T) {
	rec := &resetRecorder{recorder: recorder{got: make(chan msg, 16)}, resets: make(chan uint64, 16)}
	a, err := Listen(Config{NodeID: 1, Listen: "127.0.0.1:0", Secret: secret, Logger: quiet()}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Send(2, []byte("too early")); err == nil {
		t.Fatal("a send to a peer never connected must fail at the sender")
	}
	b, err := Listen(Config{NodeID: 2, Listen: "127.0.0.1:0", Secret: secret, Logger: quiet(),
		Peers: map[uint64]string{1: a.Addr()}}, &recorder{got: make(chan msg, 16)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Request(ctxFor(t, 5*time.Second), 1, []byte("hi")); err != nil { // 2 dials 1
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case peer := <-rec.resets:
		if peer != 2 {
			t.Fatalf("reset of peer %d, want 2", peer)
		}
	case <-time.After(5 * time.Second): // well under the idle timeout (10 s)
		t.Fatal("no OnPeerReset within 5 s of the peer closing")
	}
	if err := a.Send(2, []byte("after")); err == nil {
		t.Fatal("a send after the connection ended must fail at the sender")
	}
}
