package access_test

import (
	"testing"

	"github.com/narad/narad/core/access"
)

const sec = int64(1_000_000_000)

// fail makes n failed attempts of name at nowNs, each one allowed first.
func fail(t *testing.T, th *access.Throttle, nowNs int64, name string, known bool, n int) {
	t.Helper()
	for i := range n {
		if !th.Allow(nowNs, name, known) {
			t.Fatalf("%s: try %d refused", name, i+1)
		}
		th.Failed(nowNs, name, known)
	}
}

// A burst of 5, then one try per 12 s.
func TestThrottleBurstThenRefill(t *testing.T) {
	th := access.NewThrottle(access.DefaultThrottleConfig())
	fail(t, th, 0, "alice", true, 5)
	if th.Allow(0, "alice", true) || th.Allow(12*sec-1, "alice", true) {
		t.Fatal("a sixth try within 12 s was allowed")
	}
	fail(t, th, 12*sec, "alice", true, 1)
	if th.Allow(12*sec+1, "alice", true) {
		t.Fatal("a second try right after the refilled one was allowed")
	}
	if th.Allow(10*sec, "alice", true) {
		t.Fatal("a clock that went back refilled the budget")
	}
	fail(t, th, 24*sec, "alice", true, 1)
	fail(t, th, 24*sec+60*sec, "alice", true, 5) // a minute later the burst is back
}

// A success clears the failures; another user's budget is untouched.
func TestThrottleIsPerUserAndSuccessClears(t *testing.T) {
	th := access.NewThrottle(access.DefaultThrottleConfig())
	fail(t, th, 0, "alice", true, 5)
	fail(t, th, 0, "bob", true, 5)
	th.Succeeded("alice")
	fail(t, th, 0, "alice", true, 5)
	if th.Allow(0, "bob", true) {
		t.Fatal("bob's budget was cleared by alice's success")
	}
}

// A spray of made-up usernames uses up the node-wide budget, never a known user's.
func TestThrottleSprayOfUnknownNamesSparesKnownUsers(t *testing.T) {
	cfg := access.DefaultThrottleConfig()
	th := access.NewThrottle(cfg)
	for i := range cfg.UnknownBurst {
		fail(t, th, 0, string(rune('a'+i%26))+"x", false, 1)
	}
	if th.Allow(0, "zzz", false) {
		t.Fatal("the node-wide budget allowed a try past its burst")
	}
	fail(t, th, 0, "alice", true, cfg.LoginBurst)
	if !th.Allow(cfg.UnknownRefillNs, "zzz", false) {
		t.Fatal("the node-wide budget did not refill")
	}
	if th.Tracked() != 1 {
		t.Fatalf("tracked %d usernames, want only alice", th.Tracked())
	}
}

// The remembered usernames are bounded: past TrackedMax, known users share the
// node-wide budget; a full budget is forgotten.
func TestThrottleTrackedIsBounded(t *testing.T) {
	cfg := access.DefaultThrottleConfig()
	cfg.TrackedMax = 2
	th := access.NewThrottle(cfg)
	fail(t, th, 0, "a", true, 1)
	fail(t, th, 0, "b", true, 1)
	fail(t, th, 0, "c", true, 1)
	if th.Tracked() != 2 {
		t.Fatalf("tracked %d", th.Tracked())
	}
	th.Allow(cfg.LoginRefillNs, "a", true) // refilled: forgotten
	if th.Tracked() != 1 {
		t.Fatalf("tracked %d after a's budget refilled", th.Tracked())
	}
}
