package simnet

import (
	"reflect"
	"testing"

	"github.com/narad/narad/core/rng"
)

var faulty = Config{DelayMinNs: 100, DelayMaxNs: 1000, DropProb: 0.2, DupProb: 0.1, StaleProb: 0.05, StaleMinNs: 1e6, StaleMaxNs: 2e6}

func sendMany(n *Net[int], count int) []Delivery[int] {
	var out []Delivery[int]
	for i := range count {
		out = append(out, n.Send(int64(i), 1, 2, i)...)
	}
	return out
}

func TestFaultRatesAndBounds(t *testing.T) {
	n := New[int](rng.New(3), faulty)
	ds := sendMany(n, 20000)
	st := n.Stats()
	if st.Dropped < 3500 || st.Dropped > 4500 || st.Duplicated < 1200 || st.Duplicated > 2000 || st.Stale < 600 || st.Stale > 1100 {
		t.Fatalf("rates off: %+v", st)
	}
	if want := int(st.Sent - st.Dropped + st.Duplicated + st.Stale); len(ds) != want {
		t.Fatalf("%d deliveries, want %d", len(ds), want)
	}
	reordered := false
	for i, d := range ds {
		sent := int64(d.Msg)
		lo, hi := sent+faulty.DelayMinNs, sent+faulty.DelayMaxNs
		if d.Stale {
			lo, hi = sent+faulty.StaleMinNs, sent+faulty.StaleMaxNs
		}
		if d.AtNs < lo || d.AtNs > hi {
			t.Fatalf("delivery %+v outside [%d, %d]", d, lo, hi)
		}
		if i > 0 && !d.Stale && !ds[i-1].Stale && d.AtNs < ds[i-1].AtNs {
			reordered = true
		}
	}
	if !reordered {
		t.Fatalf("jitter never reordered two messages")
	}
}

func TestNoFaultsDeliversEachOnceAfterTheMinimumDelay(t *testing.T) {
	n := New[int](rng.New(3), faulty)
	n.SetFaults(false)
	ds := sendMany(n, 1000)
	for i, d := range ds {
		if d.Msg != i || d.AtNs != int64(i)+faulty.DelayMinNs || d.Stale || !n.Arrives(d) {
			t.Fatalf("delivery %d: %+v", i, d)
		}
	}
}

func TestCutsDropAtDeliveryOneWayOrBoth(t *testing.T) {
	n := New[int](rng.New(3), faulty)
	n.SetFaults(false)
	inFlight := n.Send(0, 1, 2, 7)[0]
	back := n.Send(0, 2, 1, 8)[0]
	n.Cut(1, 2) // after the send: the message in flight is lost
	if n.Arrives(inFlight) || !n.Arrives(back) {
		t.Fatalf("one-way cut: 1->2 must drop, 2->1 must arrive")
	}
	n.Partition(1, 3)
	if n.Arrives(n.Send(0, 3, 1, 9)[0]) || n.Arrives(n.Send(0, 1, 3, 9)[0]) {
		t.Fatalf("partition must cut both ways")
	}
	n.Heal()
	if !n.Arrives(n.Send(0, 1, 2, 10)[0]) || !n.Arrives(n.Send(0, 3, 1, 11)[0]) {
		t.Fatalf("heal must restore every link")
	}
	if st := n.Stats(); st.CutDropped != 3 {
		t.Fatalf("cut drops %d, want 3", st.CutDropped)
	}
}

func TestSameSeedSameFates(t *testing.T) {
	a, b := sendMany(New[int](rng.New(9), faulty), 500), sendMany(New[int](rng.New(9), faulty), 500)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different deliveries")
	}
}
