package auth

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
)

func user(t *testing.T, name, password string) meta.User {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return meta.User{Name: name, Hash: string(h), Grants: []access.Grant{{Action: access.Produce, Patterns: []string{"o"}}}}
}

// clocked is an Authenticator on a clock the test moves.
func clocked(t *testing.T, users ...meta.User) (*Authenticator, *time.Time) {
	a := New()
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	dummy, _ := bcrypt.GenerateFromPassword([]byte("dummy-password"), bcrypt.MinCost) // fast, as the users' here
	a.dummy = string(dummy)
	a.SetUsers(users)
	return a, &now
}

func TestAuthenticate(t *testing.T) {
	a, _ := clocked(t, user(t, "alice", "password-a"))
	id, err := a.Authenticate("alice", "password-a")
	if err != nil || id.Name != "alice" || !id.Allows(access.Produce, "o") || id.Allows(access.Consume, "o") {
		t.Fatalf("right password: %+v %v", id, err)
	}
	for _, c := range [][2]string{{"alice", "password-b"}, {"bob", "password-a"}, {"alice", ""}} {
		if _, err := a.Authenticate(c[0], c[1]); !errors.Is(err, ErrNoCredentials) {
			t.Errorf("%q/%q: %v", c[0], c[1], err)
		}
	}
}

// A changed password (a new hash) or a deleted user stops a cached credential at once.
func TestCachedCredentialFollowsTheReplica(t *testing.T) {
	a, _ := clocked(t, user(t, "alice", "password-a"))
	if _, err := a.Authenticate("alice", "password-a"); err != nil {
		t.Fatal(err)
	}
	a.SetUsers([]meta.User{user(t, "alice", "password-b")})
	if _, err := a.Authenticate("alice", "password-a"); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("the old password after a change: %v", err)
	}
	if _, err := a.Authenticate("alice", "password-b"); err != nil {
		t.Fatalf("the new password: %v", err)
	}
	a.SetUsers(nil)
	if _, err := a.Authenticate("alice", "password-b"); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("a deleted user's cached password: %v", err)
	}
}

// Five failures, then one try per 12 s; a credential verified before keeps working (the
// throttle guards bcrypt checks, not sessions an attacker cannot forge).
func TestThrottledAfterFiveFailures(t *testing.T) {
	a, now := clocked(t, user(t, "alice", "password-a"), user(t, "bob", "password-b"))
	if _, err := a.Authenticate("bob", "password-b"); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := a.Authenticate("alice", "wrong-password"); !errors.Is(err, ErrNoCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
		if _, err := a.Authenticate("bob", "wrong-password"); !errors.Is(err, ErrNoCredentials) {
			t.Fatalf("bob's failure %d: %v", i+1, err)
		}
	}
	if _, err := a.Authenticate("alice", "password-a"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("the sixth try: %v", err)
	}
	if _, err := a.Authenticate("bob", "password-b"); err != nil {
		t.Fatalf("bob's cached credential while throttled: %v", err)
	}
	*now = now.Add(12 * time.Second)
	if _, err := a.Authenticate("alice", "password-a"); err != nil {
		t.Fatalf("12 s later: %v", err)
	}
	for range 5 { // the success cleared alice's failures
		if _, err := a.Authenticate("alice", "wrong-password"); !errors.Is(err, ErrNoCredentials) {
			t.Fatalf("after the success: %v", err)
		}
	}
}

// A spray of made-up usernames is throttled node-wide and leaves a real user's budget.
func TestSprayOfUnknownNames(t *testing.T) {
	a, _ := clocked(t, user(t, "alice", "password-a"))
	throttled := 0
	for i := range 60 {
		if _, err := a.Authenticate("ghost"+string(rune('a'+i%26))+string(rune('a'+i/26)), "password-x"); errors.Is(err, ErrThrottled) {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("60 made-up usernames at one instant were never throttled")
	}
	if _, err := a.Authenticate("alice", "password-a"); err != nil {
		t.Fatalf("alice after the spray: %v", err)
	}
}

func TestHash(t *testing.T) {
	if _, err := Hash("short"); !errors.Is(err, access.ErrInvalid) {
		t.Fatalf("a 5-byte password: %v", err)
	}
	h, err := Hash("long enough")
	if err != nil || !meta.ValidHash(h) || bcrypt.CompareHashAndPassword([]byte(h), []byte("long enough")) != nil {
		t.Fatalf("%q %v", h, err)
	}
}

// Requests with the same credentials that arrive while their bcrypt check runs wait for
// it: one check serves them all.
func TestConcurrentChecksShareOneBcrypt(t *testing.T) {
	a, _ := clocked(t, user(t, "alice", "password-a"))
	const n = 16
	a.onCheck = func() { // hold the first check until the other n-1 requests joined it
		deadline := time.Now().Add(10 * time.Second)
		for a.joined.Load() < n-1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polls a condition, with a bound
		}
	}
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := a.Authenticate("alice", "password-a")
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c := a.checks.Load(); c != 1 {
		t.Fatalf("%d bcrypt checks for %d requests with one credential", c, n)
	}
}
