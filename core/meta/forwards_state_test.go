package meta

import (
	"errors"
	"strings"
	"testing"
)

// forwardEntry is the decoded entry of c forwarded as id.
func forwardEntry(c Command, id ProposalID) proposalEntry {
	c, err := c.normalize()
	if err != nil {
		panic(err)
	}
	return proposalEntry{Node: 1, Seq: id.Seq, NowNs: 5, Cmd: c, Fwd: id}
}

// A state restored from a snapshot (a restart's, or the one a leader sends a follower that
// is behind: both decode the same body) refuses at apply a copy of a forward applied
// before it; the forwarders round-trip through the command entry and the snapshot, and a
// forwarded entry naming a commit index not below its own is refused as invalid.
func TestForwardersInTheSnapshot(t *testing.T) {
	id := ProposalID{Origin: 2, Nonce: 7, Seq: 100, Commit: 3}
	p, err := decodeCommand(encodeCommand(forwardEntry(Command{Kind: CreateTopic, Name: "t"}, id)))
	if err != nil || p.Fwd != id {
		t.Fatalf("command round trip: %+v, %v", p.Fwd, err)
	}
	m := newMachine()
	if _, err := m.applyProposal(p, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := m.apply(Command{Kind: DeleteTopic, Name: "t"}, 5, 5); err != nil {
		t.Fatal(err)
	}
	sn := snapshot{Index: 5, Term: 1, Data: encodeState(m), Conf: sampleSnapshot().Conf}
	if !strings.Contains(string(sn.Data), `"forwards":[{"origin":2,"nonce":7,"commit":3,"seqs":[{"seq":100}]}]`) {
		t.Fatalf("state without the forwarder: %s", sn.Data)
	}
	got, err := decodeSnapshotBody(encodeSnapshotBody(sn))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := got.m.applyProposal(p, 6); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("copy after the restore: %v, want ErrDuplicate", err)
	}
	if _, ok := got.m.byName["t"]; ok {
		t.Fatal("copy after the restore applied again")
	}
	late := p
	late.Fwd.Seq, late.Fwd.Commit = 101, 7
	if _, err := got.m.applyProposal(late, 7); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a forward naming its own index committed: %v, want ErrInvalid", err)
	}
	if len(encodeState(newMachine())) != len(`{"commands":0,"topics":[]}`) {
		t.Fatalf("an empty state names forwarders: %s", encodeState(newMachine()))
	}
}

// The forwards of a forgotten member are refused, and its forwarder dropped; a forwarder
// the snapshot holds for a forgotten member, out of order, or past its bounds is refused.
func TestForwardersOfForgottenMembersAndBadSnapshots(t *testing.T) {
	m := newMachine()
	id := ProposalID{Origin: 2, Nonce: 7, Seq: 100, Commit: 3}
	if _, err := m.applyProposal(forwardEntry(Command{Kind: CreateTopic, Name: "t"}, id), 4); err != nil {
		t.Fatal(err)
	}
	m.members[2] = Member{ID: 2, Addr: "n2"}
	m.forget(2)
	if _, ok := m.forwards[2]; ok {
		t.Fatal("a forgotten member's forwarder kept")
	}
	next := ProposalID{Origin: 2, Nonce: 9, Seq: 1, Commit: 4}
	if _, err := m.applyProposal(forwardEntry(Command{Kind: CreateTopic, Name: "u"}, next), 5); !errors.Is(err, ErrStale) {
		t.Fatalf("a forgotten member's forward: %v, want ErrStale", err)
	}
	const head = `{"index":10,"term":1,"conf_state":{"voters":[1]},"state":{"commands":1,"topics":[]`
	for name, fwd := range map[string]string{ //narad:unordered (independent cases)
		"forgotten":     `,"forgotten":[2],"forwards":[{"origin":2,"nonce":7,"commit":3,"seqs":[{"seq":1}]}]`,
		"unsorted":      `,"forwards":[{"origin":3,"nonce":7,"commit":3,"seqs":[{"seq":1}]},{"origin":2,"nonce":7,"commit":3,"seqs":[{"seq":1}]}]`,
		"zero nonce":    `,"forwards":[{"origin":2,"nonce":0,"commit":3,"seqs":[{"seq":1}]}]`,
		"commit past":   `,"forwards":[{"origin":2,"nonce":7,"commit":10,"seqs":[{"seq":1}]}]`,
		"seq at floor":  `,"forwards":[{"origin":2,"nonce":7,"commit":3,"floor":4,"seqs":[{"seq":4}]}]`,
		"seqs unsorted": `,"forwards":[{"origin":2,"nonce":7,"commit":3,"seqs":[{"seq":5},{"seq":4}]}]`,
		"no seqs":       `,"forwards":[{"origin":2,"nonce":7,"commit":3,"seqs":[]}]`,
	} {
		if _, err := decodeSnapshotBody([]byte(head + fwd + "}}")); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := head + `,"forwards":[{"origin":2,"nonce":7,"commit":3,"floor":2,"seqs":[{"seq":4,"failed":true}]}]}}`
	if _, err := decodeSnapshotBody([]byte(ok)); err != nil {
		t.Fatalf("a valid forwarder refused: %v", err)
	}
}
