package meta_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/narad/narad/core/meta"
)

func join(id uint64) meta.Command {
	return meta.Command{Kind: meta.JoinMember, Member: id, Addr: fmt.Sprintf("127.0.0.1:%d", 7000+id), Alive: true}
}

func alive(id uint64, on bool) meta.Command {
	return meta.Command{Kind: meta.SetMemberAlive, Member: id, Alive: on}
}

func ownersOf(h *harness, name string) string {
	t, ok := h.s.Topic(name)
	if !ok {
		return "missing"
	}
	return fmt.Sprint(h.s.Owners(t.ID))
}

// Partitions are assigned round-robin over the members alive when they are created; a
// dead member gets none; growing a topic assigns only its new partitions.
func TestPartitionsAssignedRoundRobinOverLiveMembers(t *testing.T) {
	h := settled(t, meta.Config{})
	if d := h.run(create("local")); d.Err != nil || ownersOf(h, "local") != "[]" {
		t.Fatalf("no member joined: partitions stay local: %v %s", d.Err, ownersOf(h, "local"))
	}
	for id := uint64(1); id <= 3; id++ {
		if d := h.run(join(id)); d.Err != nil {
			t.Fatalf("join %d: %v", id, d.Err)
		}
	}
	parts := uint32(5)
	h.run(meta.Command{Kind: meta.CreateTopic, Name: "a", Partitions: &parts})
	got := ownersOf(h, "a")
	if got != "[1 2 3 1 2]" && got != "[2 3 1 2 3]" && got != "[3 1 2 3 1]" {
		t.Fatalf("owners of a: %s, want round-robin over 1 2 3", got)
	}
	if d := h.run(alive(2, false)); d.Err != nil {
		t.Fatal(d.Err)
	}
	h.run(meta.Command{Kind: meta.CreateTopic, Name: "b", Partitions: &parts})
	if got := ownersOf(h, "b"); got != "[1 3 1 3 1]" && got != "[3 1 3 1 3]" {
		t.Fatalf("owners of b: %s, want round-robin over the live 1 and 3", got)
	}
	before := ownersOf(h, "a")
	grown := uint32(7)
	h.run(meta.Command{Kind: meta.PatchTopic, Name: "a", Partitions: &grown})
	after := ownersOf(h, "a")
	if after[:len(before)-1] != before[:len(before)-1] || len(h.s.Owners(mustTopic(t, h, "a").ID)) != 7 {
		t.Fatalf("growing a changed existing owners or missed new ones: %s -> %s", before, after)
	}
	for _, o := range h.s.Owners(mustTopic(t, h, "a").ID)[5:] {
		if o == 2 {
			t.Fatalf("a new partition went to the dead member 2: %s", after)
		}
	}
	id := mustTopic(t, h, "b").ID
	h.run(del("b"))
	if h.s.Owners(id) != nil {
		t.Fatalf("a deleted topic keeps owners")
	}
}

func mustTopic(t *testing.T, h *harness, name string) meta.Topic {
	t.Helper()
	tp, ok := h.s.Topic(name)
	if !ok {
		t.Fatalf("topic %s missing", name)
	}
	return tp
}

func TestMemberCommandValidation(t *testing.T) {
	h := settled(t, meta.Config{})
	for _, c := range []meta.Command{
		{Kind: meta.JoinMember, Addr: "x:1", Alive: true},                       // no id
		{Kind: meta.JoinMember, Member: 1, Alive: true},                         // no address
		{Kind: meta.JoinMember, Member: 1, Addr: "x:1"},                         // joins dead
		{Kind: meta.SetMemberAlive, Member: 1, Addr: "x:1"},                     // address on member-alive
		{Kind: meta.JoinMember, Member: 1, Addr: "x:1", Alive: true, Name: "t"}, // topic field
		{Kind: meta.CreateTopic, Name: "t", Member: 3},                          // member field on a topic
	} {
		if d := h.run(c); !errors.Is(d.Err, meta.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", c, d.Err)
		}
	}
	if d := h.run(alive(9, false)); !errors.Is(d.Err, meta.ErrNoMember) {
		t.Fatalf("member-alive of an unknown member: %v", d.Err)
	}
}

// Members and owners survive a restart through the snapshot and the log.
func TestMembersAndOwnersSurviveRestarts(t *testing.T) {
	h := settled(t, meta.Config{SnapshotEveryEntries: 3})
	for id := uint64(1); id <= 3; id++ {
		h.run(join(id))
	}
	h.run(alive(3, false))
	h.run(create("a"))
	wantOwners, wantMembers := ownersOf(h, "a"), fmt.Sprint(h.s.Members())
	h.crash()
	h.settle()
	if got := ownersOf(h, "a"); got != wantOwners {
		t.Fatalf("owners after restart %s, want %s", got, wantOwners)
	}
	if got := fmt.Sprint(h.s.Members()); got != wantMembers {
		t.Fatalf("members after restart %s, want %s", got, wantMembers)
	}
}

// The leader's controller marks a member dead once it has not been heard from for
// DeadAfterNs, and alive again when it is heard from.
func TestControllerMarksSilentMembersDeadAndBack(t *testing.T) {
	const deadAfter = 1_000_000_000
	h := settled(t, meta.Config{DeadAfterNs: deadAfter})
	h.learners = true // member 2 becomes a learner, sent the log (and never answering)
	h.run(join(1))
	h.run(join(2))
	start := h.now
	for h.now < start+3*deadAfter {
		h.s.Heartbeat(h.now, 1, "127.0.0.1:7001") // the node layer passes the leader its own
		h.tick()
		h.completeAll()
	}
	if got := fmt.Sprint(h.s.Members()); got != "[{1 127.0.0.1:7001 true false} {2 127.0.0.1:7002 false false}]" {
		t.Fatalf("members after member 2 fell silent: %s", got)
	}
	for n := 0; n < 50 && !h.s.Members()[1].Alive; n++ {
		h.s.Heartbeat(h.now, 2, "127.0.0.1:7002")
		h.tick()
		h.completeAll()
	}
	if !h.s.Members()[1].Alive {
		t.Fatalf("member 2 heard again but still dead: %v", h.s.Members())
	}
	if got := fmt.Sprint(h.s.Voters(), h.s.Learners()); got != "[1] [2]" {
		t.Fatalf("voters and learners %s: member 2, outside the initial voters, must be a learner", got)
	}
}
