package meta_test

import (
	"errors"
	"testing"

	"github.com/narad/narad/core/meta"
)

func (h *harness) forward(c meta.Command, id meta.ProposalID) uint64 {
	h.token++
	h.s.ProposeForwarded(h.now, h.token, c, id)
	h.pump()
	return h.token
}

// answer is the answer to token, which must have come.
func (h *harness) answer(tok uint64) error {
	h.t.Helper()
	d, ok := h.done[tok]
	if !ok {
		h.t.Fatalf("proposal %d not answered", tok)
	}
	return d.Err
}

// A copy of a forwarded create, proposed again after the topic's delete, is refused at
// its apply (the create is not made again); a copy arriving later is refused at once, and
// so it stays after a restart (a later leader: a new term) that restores the forwarders
// from the snapshot. With the forwards' dedupe removed (narad_mut_noforwarddedupe), the
// topic is created again.
func TestForwardedCopyAppliedOnce(t *testing.T) {
	h := settled(t, meta.Config{SnapshotEveryEntries: 4})
	id := meta.ProposalID{Origin: 2, Nonce: 7, Seq: 100, Commit: h.s.DurableCommit()}
	// Both copies and the delete between them are in the log before any of them applies.
	first, deleted, copied := h.forward(create("t"), id), h.propose(del("t")), h.forward(create("t"), id)
	h.settle()
	if err := h.answer(first); err != nil {
		t.Fatalf("first copy: %v", err)
	}
	if err := h.answer(deleted); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, ok := h.s.Topic("t"); ok {
		t.Fatal("the copy of the forwarded create was applied again after the delete")
	}
	if err := h.answer(copied); !errors.Is(err, meta.ErrDuplicate) {
		t.Fatalf("second copy answered %v, want ErrDuplicate", err)
	}
	applied := h.s.AppliedIndex()
	commands := meta.AppliedCommands(h.s)
	if late := h.forward(create("t"), id); !errors.Is(h.answer(late), meta.ErrDuplicate) {
		t.Fatalf("a late copy answered %v at once, want ErrDuplicate", h.answer(late))
	}
	h.settle()
	if got := meta.AppliedCommands(h.s); got != commands {
		t.Fatalf("a copy refused at once went through the log: %d commands, then %d", commands, got)
	}
	for i := 0; meta.SnapshotIndex(h.s) < applied; i++ { // the forward is in a snapshot
		if i > 10 {
			t.Fatalf("no snapshot past index %d", applied)
		}
		h.run(create("other"))
		h.run(del("other"))
	}
	h.crash()
	if h.recovered.SnapshotIndex < applied {
		t.Fatalf("recovered from snapshot %d, before the forward at %d", h.recovered.SnapshotIndex, applied)
	}
	again := h.forward(create("t"), id)
	h.settle()
	if err := h.answer(again); !errors.Is(err, meta.ErrDuplicate) {
		t.Fatalf("after a restart from the snapshot a copy answered %v, want ErrDuplicate", err)
	}
	if _, ok := h.s.Topic("t"); ok {
		t.Fatal("after a restart from the snapshot the copy was applied again")
	}
}

// The forwarder follows the member's processes: a new process (another nonce, naming a
// higher commit index) is admitted with any seq, a request of the earlier process is
// refused after it (ErrStale), as is one of a process that names no higher index; a copy
// whose first apply failed is refused (ErrStale), and so is a seq below the floor of the
// ForwardSeqsMax kept.
func TestForwardersFollowProcesses(t *testing.T) {
	h := settled(t, meta.Config{})
	old := meta.ProposalID{Origin: 2, Nonce: 7, Seq: 100, Commit: h.s.DurableCommit()}
	if d := h.runForward(create("a"), old); d != nil {
		t.Fatalf("old process: %v", d)
	}
	next := meta.ProposalID{Origin: 2, Nonce: 9, Seq: 5, Commit: h.s.DurableCommit()}
	if d := h.runForward(create("b"), next); d != nil {
		t.Fatalf("a new process with a lower seq: %v", d)
	}
	for _, c := range []struct {
		name string
		id   meta.ProposalID
	}{
		{"earlier process", meta.ProposalID{Origin: 2, Nonce: 7, Seq: 101, Commit: old.Commit}},
		{"no higher index", meta.ProposalID{Origin: 2, Nonce: 11, Seq: 1, Commit: next.Commit}},
		{"earlier, seq higher", meta.ProposalID{Origin: 2, Nonce: 7, Seq: 1 << 40, Commit: old.Commit}},
	} {
		if err := h.runForward(create("c"), c.id); !errors.Is(err, meta.ErrStale) {
			t.Errorf("%s: answered %v, want ErrStale", c.name, err)
		}
	}
	// Both copies are in the log before the first applies (a forward's refusal goes
	// through the log too).
	failed := meta.ProposalID{Origin: 2, Nonce: 9, Seq: 6, Commit: next.Commit}
	first, copied := h.forward(del("nothing"), failed), h.forward(del("nothing"), failed)
	h.settle()
	if err := h.answer(first); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("delete of nothing: %v", err)
	}
	if err := h.answer(copied); !errors.Is(err, meta.ErrStale) {
		t.Fatalf("copy of a failed forward: %v, want ErrStale", err)
	}
	if err := h.runForward(del("nothing"), failed); !errors.Is(err, meta.ErrStale) {
		t.Fatalf("late copy of a failed forward: %v, want ErrStale", err)
	}
	for i := range uint64(meta.ForwardSeqsMax + 2) { // seqs 5, 6, 10 and 12 fall below the floor
		id := meta.ProposalID{Origin: 2, Nonce: 9, Seq: 10 + 2*i, Commit: next.Commit}
		if err := h.runForward(meta.Command{Kind: meta.PatchTopic, Name: "b"}, id); err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
	}
	below := meta.ProposalID{Origin: 2, Nonce: 9, Seq: 7, Commit: next.Commit} // never applied
	if err := h.runForward(create("c"), below); !errors.Is(err, meta.ErrStale) {
		t.Fatalf("a seq below the floor: %v, want ErrStale", err)
	}
	gap := meta.ProposalID{Origin: 2, Nonce: 9, Seq: 15, Commit: next.Commit} // above it, new
	if err := h.runForward(create("c"), gap); err != nil {
		t.Fatalf("a new seq between applied ones: %v", err)
	}
	other := meta.ProposalID{Origin: 3, Nonce: 7, Seq: 100, Commit: h.s.DurableCommit()}
	if err := h.runForward(create("d"), other); err != nil {
		t.Fatalf("another member's forward with the same nonce and seq: %v", err)
	}
}

// runForward forwards c as id, settles and returns the answer's error.
func (h *harness) runForward(c meta.Command, id meta.ProposalID) error {
	h.t.Helper()
	tok := h.forward(c, id)
	h.settle()
	return h.answer(tok)
}

// A forward the leader's state refuses (the topic exists) or a guard refuses (the leader
// cannot forget itself) is answered that refusal only after an entry recorded its id, so
// that no copy applies it after that answer: a copy is refused (ErrStale).
func TestForwardRefusedOnTheLeaderIsRecorded(t *testing.T) {
	h := settled(t, meta.Config{})
	h.run(create("t"))
	for i, c := range []struct {
		cmd  meta.Command
		want error
	}{
		{create("t"), meta.ErrExists},
		{meta.Command{Kind: meta.ForgetMember, Member: 1}, meta.ErrGuard},
	} {
		id := meta.ProposalID{Origin: 2, Nonce: 7, Seq: uint64(1 + i), Commit: h.s.DurableCommit()}
		commands := meta.AppliedCommands(h.s)
		if err := h.runForward(c.cmd, id); !errors.Is(err, c.want) {
			t.Fatalf("%v: answered %v, want %v", c.cmd.Kind, err, c.want)
		}
		if got := meta.AppliedCommands(h.s); got != commands+1 {
			t.Fatalf("%v: the refusal did not go through the log (%d commands, then %d)", c.cmd.Kind, commands, got)
		}
		if err := h.runForward(c.cmd, id); !errors.Is(err, meta.ErrStale) {
			t.Fatalf("%v: a copy after the refusal answered %v, want ErrStale", c.cmd.Kind, err)
		}
	}
}
