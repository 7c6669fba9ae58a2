package main

import (
	"strings"
	"testing"
)

// ownedFakes serves two fake members, 1 and 2, that both list topic bench with partitions
// 0 and 2 owned by member 1 and partition 1 by member 2.
func ownedFakes(t *testing.T) (a, b *fakeNode, addrs string) {
	t.Helper()
	a, b, addrs = twoFakes(t)
	aAddr, bAddr, _ := strings.Cut(addrs, ",")
	for _, f := range []*fakeNode{a, b} {
		f.owners = []string{"1", "2", "1"}
		f.members = []fakeMember{{1, aAddr}, {2, bAddr}}
	}
	return a, b, addrs
}

func pins(f *fakeNode) map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.pinned {
		out[k] = v
	}
	return out
}

func TestRouteOwnerSendsEachPartitionToItsOwner(t *testing.T) {
	a, b, addrs := ownedFakes(t)
	code, r, stderr := benchJSON(t, addrs, "-mode", "produce", "-route", "owner", "-workers", "6",
		"-duration", "200ms", "-size", "64")
	if code != 0 || r.Messages == 0 || r.Errors != 0 {
		t.Fatalf("exit %d, stderr %s, result %+v", code, stderr, r)
	}
	pa, pb := pins(a), pins(b)
	if pa["0"] == 0 || pa["2"] == 0 || pb["1"] == 0 || len(pa) != 2 || len(pb) != 1 {
		t.Fatalf("member 1 got partitions %v, member 2 %v: want 0 and 2 on member 1, 1 on member 2", pa, pb)
	}
}

func TestRouteOwnerPinsLatencyConsumersToo(t *testing.T) {
	a, b, addrs := ownedFakes(t)
	code, r, stderr := benchJSON(t, addrs, "-mode", "latency", "-route", "owner", "-workers", "3",
		"-consumers", "3", "-duration", "200ms", "-drain", "20s")
	if l := r.Latency; code != 0 || l == nil || l.Produced == 0 || l.Lost != 0 || r.Errors != 0 {
		t.Fatalf("exit %d, stderr %s, result %+v", code, stderr, r)
	}
	pa, pb := pins(a), pins(b)
	if pa[""] != 0 || pb[""] != 0 || pa["1"] != 0 || pb["0"] != 0 || pb["2"] != 0 {
		t.Fatalf("member 1 got partitions %v, member 2 %v: every produce and consume pinned to its owner", pa, pb)
	}
	// Fewer consumers than partitions would leave a partition unread.
	code, _, stderr = benchJSON(t, addrs, "-mode", "latency", "-route", "owner", "-workers", "3",
		"-consumers", "2", "-duration", "100ms")
	if code != 1 || !strings.Contains(stderr, "-consumers 2") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
}

func TestRouteOwnerRefusals(t *testing.T) {
	a, b, addrs := ownedFakes(t)
	code, _, stderr := benchJSON(t, addrs, "-mode", "consume-ack", "-route", "owner", "-duration", "100ms")
	if code != 2 || !strings.Contains(stderr, "only the produce and latency modes") {
		t.Fatalf("consume-ack: exit %d, stderr %s", code, stderr)
	}
	code, _, stderr = benchJSON(t, addrs, "-mode", "produce", "-route", "nearest", "-duration", "100ms")
	if code != 2 || !strings.Contains(stderr, `-route "nearest"`) {
		t.Fatalf("unknown route: exit %d, stderr %s", code, stderr)
	}
	a.mu.Lock()
	a.owners = []string{"1", "3", "1"} // member 3 is not listed
	a.mu.Unlock()
	code, r, stderr := benchJSON(t, addrs, "-mode", "produce", "-route", "owner", "-duration", "100ms")
	if code != 1 || !strings.Contains(stderr, `partition 1 has no known owner ("3")`) || r.Messages != 0 {
		t.Fatalf("unknown owner: exit %d, stderr %s, result %+v", code, stderr, r)
	}
	if got := pins(b); len(got) != 0 {
		t.Fatalf("member 2 got produces %v after the route was refused", got)
	}
}
