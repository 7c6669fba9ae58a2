package meta_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
)

// hash is a stand-in bcrypt hash (the core checks its form, never a password).
func hash(c byte) string { return "$2a$10$" + strings.Repeat(string(c), meta.HashBytes-7) }

func produce(patterns ...string) []access.Grant {
	return []access.Grant{{Action: access.Produce, Patterns: patterns}}
}

var adminGrant = []access.Grant{{Action: access.Admin}}

func newUser(actor, name string, gs []access.Grant) meta.Command {
	return meta.Command{Kind: meta.CreateUser, Actor: actor, Username: name, Hash: hash('n'), Grants: gs}
}

func setGrants(actor, name string, gs []access.Grant) meta.Command {
	return meta.Command{Kind: meta.SetUserGrants, Actor: actor, Username: name, Grants: gs}
}

func setPassword(actor, name string, c byte) meta.Command {
	return meta.Command{Kind: meta.SetUserPassword, Actor: actor, Username: name, Hash: hash(c)}
}

func delUser(actor, name string) meta.Command {
	return meta.Command{Kind: meta.DeleteUser, Actor: actor, Username: name}
}

// withUsers is a settled store with the root user, an admin "ops" (made by root) and a
// producer "app".
func withUsers(t *testing.T, cfg meta.Config) *harness {
	h := settled(t, cfg)
	if d := h.run(meta.Command{Kind: meta.CreateRoot, Hash: hash('r')}); d.Err != nil || !d.User.Root || d.User.Name != "admin" {
		t.Fatalf("root: %+v %v", d.User, d.Err)
	}
	for _, c := range []meta.Command{newUser("admin", "ops", adminGrant), newUser("ops", "app", produce("orders", "b.*"))} {
		if d := h.run(c); d.Err != nil {
			t.Fatalf("%s %s: %v", c.Kind, c.Username, d.Err)
		}
	}
	return h
}

func TestUsersCreateReadChange(t *testing.T) {
	h := withUsers(t, meta.Config{})
	u, ok := h.s.User("app")
	if !ok || u.Hash != hash('n') || u.Root || u.CreatedAtMs != h.now/1_000_000 || len(u.Grants) != 1 ||
		strings.Join(u.Grants[0].Patterns, ",") != "b.*,orders" {
		t.Fatalf("app: %+v %v", u, ok)
	}
	if got := len(h.s.Users()); got != 3 || h.s.Users()[0].Name != "admin" {
		t.Fatalf("Users: %+v", h.s.Users())
	}
	h.now += 5_000_000
	if d := h.run(setGrants("ops", "app", nil)); d.Err != nil || len(d.User.Grants) != 0 || d.User.UpdatedAtMs != h.now/1_000_000 {
		t.Fatalf("revoke all: %+v %v", d.User, d.Err)
	}
	if d := h.run(setPassword("app", "app", 'p')); d.Err != nil || d.User.Hash != hash('p') {
		t.Fatalf("own password: %+v %v", d.User, d.Err)
	}
	if d := h.run(delUser("ops", "app")); d.Err != nil || d.User.Name != "app" {
		t.Fatalf("delete: %+v %v", d.User, d.Err)
	}
	if _, ok := h.s.User("app"); ok {
		t.Fatal("deleted user still there")
	}
}

// The rules of who may change whom, each refused with the error the API maps.
func TestUserRulesRefuse(t *testing.T) {
	h := withUsers(t, meta.Config{})
	cases := []struct {
		name string
		c    meta.Command
		want error
	}{
		{"a second root", meta.Command{Kind: meta.CreateRoot, Hash: hash('x')}, meta.ErrUserExists},
		{"an existing name", newUser("admin", "app", nil), meta.ErrUserExists},
		{"not an admin", newUser("app", "x", nil), meta.ErrForbidden},
		{"an unknown actor", newUser("ghost", "x", nil), meta.ErrForbidden},
		{"admin granted by a non-root admin", newUser("ops", "x", adminGrant), meta.ErrForbidden},
		{"delete root", delUser("ops", "admin"), meta.ErrForbidden},
		{"delete root by root", delUser("admin", "admin"), meta.ErrForbidden},
		{"delete self", delUser("ops", "ops"), meta.ErrForbidden},
		{"re-grant self", setGrants("ops", "ops", nil), meta.ErrForbidden},
		{"re-grant root", setGrants("admin", "admin", nil), meta.ErrForbidden},
		{"root's password by an admin", setPassword("ops", "admin", 'x'), meta.ErrForbidden},
		{"another's password by a non-admin", setPassword("app", "ops", 'x'), meta.ErrForbidden},
		{"an unknown user", delUser("ops", "nobody"), meta.ErrUserNotFound},
		{"a password without a hash", meta.Command{Kind: meta.SetUserPassword, Actor: "app", Username: "app"}, meta.ErrInvalid},
		{"a plain password", meta.Command{Kind: meta.CreateUser, Actor: "admin", Username: "y", Hash: "hunter2hunter2"}, meta.ErrInvalid},
		{"a bad username", newUser("admin", "a b", nil), meta.ErrInvalid},
		{"a bad grant", newUser("admin", "z", []access.Grant{{Action: access.Admin, Patterns: []string{"a"}}}), meta.ErrInvalid},
		{"topic fields", meta.Command{Kind: meta.DeleteUser, Actor: "admin", Username: "app", Name: "t"}, meta.ErrInvalid},
		{"user fields on a topic", meta.Command{Kind: meta.CreateTopic, Name: "t", Username: "app"}, meta.ErrInvalid},
	}
	before := len(h.s.Users())
	for _, c := range cases {
		if d := h.run(c.c); !errors.Is(d.Err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, d.Err, c.want)
		}
	}
	if u, _ := h.s.User("ops"); len(h.s.Users()) != before || !access.IsAdmin(u.Grants) {
		t.Fatalf("a refused command changed the users: %+v", h.s.Users())
	}
	// Root grants admin, changes its own password, and a user with no grants is allowed.
	for _, c := range []meta.Command{newUser("admin", "ops2", adminGrant), setPassword("admin", "admin", 'q'), newUser("ops", "nil", nil)} {
		if d := h.run(c); d.Err != nil {
			t.Errorf("%s %s: %v", c.Kind, c.Username, d.Err)
		}
	}
}

// An actor's rights are checked when the entry applies, not only when it is proposed:
// an admin revoked by an earlier entry can no longer act, even with the entry in flight.
func TestUserActorCheckedAtApply(t *testing.T) {
	h := withUsers(t, meta.Config{})
	revoke := h.propose(setGrants("admin", "ops", produce("x")))
	late := h.propose(newUser("ops", "late", nil))
	h.settle()
	if d := h.done[revoke]; d.Err != nil {
		t.Fatalf("revoke: %v", d.Err)
	}
	if d := h.done[late]; !errors.Is(d.Err, meta.ErrForbidden) {
		t.Fatalf("a command of a revoked admin: %v", d.Err)
	}
	if _, ok := h.s.User("late"); ok {
		t.Fatal("the revoked admin's user exists")
	}
}

// Users survive a restart through the snapshot and the log, hashes and all.
func TestUsersSurviveRestarts(t *testing.T) {
	h := withUsers(t, meta.Config{SnapshotEveryEntries: 3})
	h.run(setPassword("app", "app", 'p'))
	h.run(newUser("admin", "last", produce("*")))
	want := h.s.Users()
	digest := h.s.StateDigest()
	h.crash()
	h.settle()
	got := h.s.Users()
	if len(got) != len(want) || h.s.StateDigest() != digest {
		t.Fatalf("users after restart %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Hash != want[i].Hash || got[i].Root != want[i].Root ||
			got[i].UpdatedAtMs != want[i].UpdatedAtMs || len(got[i].Grants) != len(want[i].Grants) {
			t.Fatalf("user %d after restart %+v, want %+v", i, got[i], want[i])
		}
	}
}

// No answer built from a User carries its hash: User marshals without it.
func TestUserJSONHasNoHash(t *testing.T) {
	b, err := json.Marshal(meta.User{Name: "u", Hash: hash('s'), Grants: produce("a")})
	if err != nil || strings.Contains(string(b), "$2a$") || strings.Contains(string(b), "hash") {
		t.Fatalf("%s %v", b, err)
	}
}

// A topic write carries its actor: the entry applies only if the actor's grants of that
// index cover the topic (create), so a forwarded write is checked again by the leader.
func TestTopicWritesCheckTheirActor(t *testing.T) {
	h := withUsers(t, meta.Config{})
	h.run(newUser("admin", "maker", []access.Grant{{Action: access.Create, Patterns: []string{"o*"}}}))
	cases := []struct {
		name string
		c    meta.Command
		want error
	}{
		{"a creator's topic", meta.Command{Kind: meta.CreateTopic, Name: "orders", Actor: "maker"}, nil},
		{"outside the pattern", meta.Command{Kind: meta.CreateTopic, Name: "x", Actor: "maker"}, meta.ErrForbidden},
		{"a producer", meta.Command{Kind: meta.CreateTopic, Name: "o2", Actor: "app"}, meta.ErrForbidden},
		{"an unknown actor", meta.Command{Kind: meta.DeleteTopic, Name: "orders", Actor: "ghost"}, meta.ErrForbidden},
		{"an admin", meta.Command{Kind: meta.CreateTopic, Name: "x", Actor: "ops"}, nil},
		{"a patch", meta.Command{Kind: meta.PatchTopic, Name: "orders", Actor: "maker", RetentionMs: new(int64(5))}, nil},
		{"a delete", meta.Command{Kind: meta.DeleteTopic, Name: "orders", Actor: "maker"}, nil},
		{"a member command with an actor", meta.Command{Kind: meta.JoinMember, Member: 1, Addr: "a:1", Alive: true, Actor: "ops"}, meta.ErrInvalid},
	}
	for _, c := range cases {
		if d := h.run(c.c); !errors.Is(d.Err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, d.Err, c.want)
		}
	}
	revoke := h.propose(setGrants("admin", "maker", nil))
	late := h.propose(meta.Command{Kind: meta.CreateTopic, Name: "o3", Actor: "maker"})
	h.settle()
	if h.done[revoke].Err != nil || !errors.Is(h.done[late].Err, meta.ErrForbidden) {
		t.Fatalf("a create after its actor's revoke: %v, %v", h.done[revoke].Err, h.done[late].Err)
	}
}

// The creator owns a topic: it may patch and delete it after its grants changed; a user
// deleted leaves its topics without an owner, so a namesake made later owns nothing.
func TestCreatorOwnsTheTopic(t *testing.T) {
	h := withUsers(t, meta.Config{SnapshotEveryEntries: 4})
	h.run(newUser("admin", "maker", []access.Grant{{Action: access.Create, Patterns: []string{"o*"}}}))
	d := h.run(meta.Command{Kind: meta.CreateTopic, Name: "orders", Actor: "maker"})
	if d.Err != nil || d.Topic.Owner != "maker" {
		t.Fatalf("create: %+v %v", d.Topic, d.Err)
	}
	if d := h.run(meta.Command{Kind: meta.CreateTopic, Name: "sys"}); d.Err != nil || d.Topic.Owner != "" {
		t.Fatalf("the system's topic: %+v %v", d.Topic, d.Err)
	}
	h.run(setGrants("admin", "maker", nil))
	if d := h.run(meta.Command{Kind: meta.PatchTopic, Name: "orders", Actor: "maker", RetentionMs: new(int64(9))}); d.Err != nil {
		t.Fatalf("the owner patches without a grant: %v", d.Err)
	}
	if d := h.run(meta.Command{Kind: meta.PatchTopic, Name: "orders", Actor: "app", RetentionMs: new(int64(9))}); !errors.Is(d.Err, meta.ErrForbidden) {
		t.Fatalf("another user patches: %v", d.Err)
	}
	h.crash()
	h.settle()
	if tp, _ := h.s.Topic("orders"); tp.Owner != "maker" {
		t.Fatalf("owner after a restart: %+v", tp)
	}
	h.run(delUser("admin", "maker"))
	h.run(newUser("admin", "maker", nil))
	if tp, _ := h.s.Topic("orders"); tp.Owner != "" {
		t.Fatalf("a deleted user still owns: %+v", tp)
	}
	if d := h.run(meta.Command{Kind: meta.DeleteTopic, Name: "orders", Actor: "maker"}); !errors.Is(d.Err, meta.ErrForbidden) {
		t.Fatalf("a namesake deletes: %v", d.Err)
	}
}
