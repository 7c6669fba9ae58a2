package simnet

import (
	"testing"

	"github.com/narad/narad/core/rng"
)

// A send fails at the sender while the pair's connection is not up after a Reset, and a
// message in flight on the connection a Reset ended is lost.
func TestResetLosesInFlightAndRefusesUntilUp(t *testing.T) {
	n := New[int](rng.New(1), Config{DelayMinNs: 100, ConnectMaxNs: 1000})
	n.SetFaults(false)
	ds, failed := n.Transmit(0, 1, 2, 7)
	if failed || len(ds) != 1 {
		t.Fatalf("the first connection is up from the start: %v %v", ds, failed)
	}
	up := n.Reset(10, 2, 1)
	if up < 10 || up > 1010 {
		t.Fatalf("up at %d, want in [10, 1010]", up)
	}
	if n.Arrives(ds[0]) {
		t.Fatal("a message in flight on a connection that ended arrived")
	}
	if up > 10 {
		if _, failed := n.Transmit(up-1, 1, 2, 8); !failed {
			t.Fatal("a send before the new connection is up must fail at the sender")
		}
	}
	ds, failed = n.Transmit(up, 2, 1, 9)
	if failed || len(ds) != 1 || !n.Arrives(ds[0]) {
		t.Fatalf("a send once the connection is up arrives: %v %v", ds, failed)
	}
	if st := n.Stats(); st.Resets != 1 || st.ResetDropped != 1 || (up > 10 && st.NotConnected != 1) {
		t.Fatalf("stats %+v", st)
	}
}

// SendFailProb fails sends at the sender with faults on only, and such a send delivers
// nothing.
func TestSendFailProb(t *testing.T) {
	n := New[int](rng.New(2), Config{DelayMinNs: 100, SendFailProb: 0.1})
	fails := 0
	for i := range 10000 {
		ds, failed := n.Transmit(int64(i), 1, 2, i)
		if failed {
			fails++
			if len(ds) != 0 {
				t.Fatalf("a failed send delivered %v", ds)
			}
		}
	}
	if fails < 800 || fails > 1200 || n.Stats().SendFailed != uint64(fails) {
		t.Fatalf("%d failed sends of 10000 at 0.1: %+v", fails, n.Stats())
	}
	n.SetFaults(false)
	for i := range 1000 {
		if _, failed := n.Transmit(int64(i), 1, 2, i); failed {
			t.Fatal("a send failed with faults off and the connection up")
		}
	}
}
