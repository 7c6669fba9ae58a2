package dispatch

import (
	"errors"
	"testing"
)

// commitsByPartition maps each commit of rd to its partition, checking that every
// record in it was rerouted there too.
func commitsByPartition(t *testing.T, rd Ready) map[uint32]Commit {
	t.Helper()
	out := map[uint32]Commit{}
	for _, c := range rd.Commits {
		for _, r := range c.Records {
			if r.Partition != c.Key.Partition {
				t.Fatalf("record seq %d says partition %d inside a commit for %d", r.Seq, r.Partition, c.Key.Partition)
			}
		}
		out[c.Key.Partition] = c
	}
	return out
}

// A partition whose owner membership says is dead has its records rerouted at once, to
// the next partition whose owner is alive and is another member.
func TestDeadOwnerReroutesAtOnce(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 6, caughtUp: true, dead: map[uint64]bool{1: true}}
	d := New(Config{LingerNs: -1}, cat, 1)
	d.Add(0, rec(1, "t", 1, 0)) // owner 1: dead
	d.Add(0, rec(2, "t", 1, 3)) // owner 1: dead
	d.Add(0, rec(3, "t", 1, 1)) // owner 2
	d.Pump(0)
	got := commitsByPartition(t, d.Ready())
	if len(got) != 2 || len(got[1].Records) != 2 || len(got[4].Records) != 1 {
		t.Fatalf("want seqs 1 and 3 on partition 1 and seq 2 on partition 4, got %+v", got)
	}
	if d.Stats().Rerouted != 2 {
		t.Fatalf("rerouted %d, want 2", d.Stats().Rerouted)
	}
	for _, c := range got {
		d.CommitDone(0, c.ID, nil)
	}
	d.Pump(0)
	if rd := d.Ready(); rd.Checkpoint != 4 {
		t.Fatalf("checkpoint %d, want 4", rd.Checkpoint)
	}
}

// Failed commits to an owner that membership still calls alive never reroute: its
// partition's records wait for it, pass after pass; once membership says it is dead they
// go to a sibling at once (issue 13, point 8).
func TestFailedCommitsToALiveOwnerNeverReroute(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 3, caughtUp: true, dead: map[uint64]bool{}}
	d := New(Config{LingerNs: -1}, cat, 1)
	d.Add(0, rec(1, "t", 1, 0))
	now := int64(0)
	for pass := 1; pass <= 6; pass++ {
		d.Pump(now)
		got := commitsByPartition(t, d.Ready())
		c, ok := got[0]
		if len(got) != 1 || !ok {
			t.Fatalf("pass %d: want a commit to partition 0, got %+v", pass, got)
		}
		d.CommitDone(now, c.ID, errors.New("owner unreachable"))
		now += DefaultFailureBackoffNs
	}
	cat.dead[1] = true // partition 0's owner
	d.Pump(now)
	got := commitsByPartition(t, d.Ready())
	if c, ok := got[1]; len(got) != 1 || !ok || c.Records[0].Seq != 1 {
		t.Fatalf("owner dead: seq 1 should go to partition 1: %+v", got)
	}
}

// Records whose commit is in flight stay where they are when the owner is found dead:
// only the records waiting behind the commit move. The in-flight ones move once their
// commit fails (here: times out).
func TestInflightCommitIsNeverRerouted(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 3, caughtUp: true, dead: map[uint64]bool{}}
	d := New(Config{LingerNs: -1}, cat, 1)
	d.Add(0, rec(1, "t", 1, 0))
	d.Pump(0)
	first := d.Ready().Commits
	if len(first) != 1 {
		t.Fatalf("want one commit, got %+v", first)
	}
	cat.dead[1] = true
	d.Add(1, rec(2, "t", 1, 0))
	d.Pump(1)
	got := commitsByPartition(t, d.Ready())
	if c, ok := got[1]; len(got) != 1 || !ok || len(c.Records) != 1 || c.Records[0].Seq != 2 {
		t.Fatalf("only the waiting seq 2 may move while seq 1 is in flight: %+v", got)
	}
	d.CommitDone(1, got[1].ID, nil)
	timeout := int64(DefaultCommitTimeoutNs)
	d.Tick(timeout)
	d.Pump(timeout)
	got = commitsByPartition(t, d.Ready())
	if c, ok := got[1]; len(got) != 1 || !ok || c.Records[0].Seq != 1 {
		t.Fatalf("after its timeout seq 1 should move to partition 1: %+v", got)
	}
	d.CommitDone(timeout, got[1].ID, nil)
	d.Pump(timeout)
	if rd := d.Ready(); rd.Checkpoint != 3 {
		t.Fatalf("checkpoint %d, want 3", rd.Checkpoint)
	}
}

// With every other owner dead there is no live sibling: the records wait for their own
// partition (and the checkpoint with them).
func TestNoLiveSiblingKeepsRecords(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 3, caughtUp: true, dead: map[uint64]bool{1: true, 2: true, 3: true}}
	d := New(Config{LingerNs: -1}, cat, 1)
	d.Add(0, rec(1, "t", 1, 0))
	d.Pump(0)
	got := commitsByPartition(t, d.Ready())
	if _, ok := got[0]; len(got) != 1 || !ok || d.Stats().Rerouted != 0 {
		t.Fatalf("with no live sibling the record is committed to its own partition: %+v", got)
	}
}

// An owner that answers a commit "partition failed" sends that partition's records to a
// sibling at once, one of the same owner included (the owner is alive, one partition of
// it failed), skipping a sibling also reported failed; after PartitionFailedHoldNs a
// commit tries the partition again, and a success ends the hold (issue 13, point 4).
func TestFailedPartitionReroutesAtOnceThenIsTriedAgain(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 6, caughtUp: true, dead: map[uint64]bool{}}
	d := New(Config{LingerNs: -1}, cat, 1)
	d.Add(0, rec(1, "t", 1, 1)) // owner 2
	d.Add(0, rec(2, "t", 1, 2)) // owner 3
	d.Pump(0)
	got := commitsByPartition(t, d.Ready())
	d.CommitDone(0, got[1].ID, ErrPartitionFailed)
	d.CommitDone(0, got[2].ID, nil)
	d.Add(0, rec(3, "t", 1, 2)) // owner 3, healthy
	d.Pump(0)
	got = commitsByPartition(t, d.Ready())
	if c := got[2]; len(got) != 1 || len(c.Records) != 2 {
		t.Fatalf("seq 1 should join seq 3 on partition 2 at once: %+v", got)
	}
	d.CommitDone(0, got[2].ID, ErrPartitionFailed) // seqs 1 and 3 both wait now
	d.Pump(0)
	got = commitsByPartition(t, d.Ready())
	if c, ok := got[3]; len(got) != 1 || !ok || len(c.Records) != 2 {
		t.Fatalf("seqs 1 and 3 should go to partition 3 (1 failed, 2 failed): %+v", got)
	}
	d.CommitDone(0, got[3].ID, nil)
	now := int64(PartitionFailedHoldNs) + 1
	d.Add(now, rec(4, "t", 1, 1))
	d.Pump(now)
	got = commitsByPartition(t, d.Ready())
	if _, ok := got[1]; len(got) != 1 || !ok {
		t.Fatalf("after the hold seq 4 should try partition 1 again: %+v", got)
	}
	d.CommitDone(now, got[1].ID, nil)
	if d.partitionFailed(now, Key{Topic: "t", Incarnation: 1, Partition: 1}) {
		t.Fatal("a success should end the hold")
	}
	if d.Stats().Rerouted != 3 { // seq 1 to partition 2, then seqs 1 and 3 to partition 3
		t.Fatalf("rerouted %d, want 3", d.Stats().Rerouted)
	}
}

// A partition failure answered by an owner no longer holds once another member owns the
// partition (a forget reassigned it): its records go to the new owner, not to a sibling
// (cluster seed 2284).
func TestPartitionFailureOfAFormerOwnerDoesNotReroute(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 6, caughtUp: true, dead: map[uint64]bool{}}
	d := New(Config{LingerNs: -1}, cat, 1)
	d.Add(0, rec(1, "t", 1, 1)) // owner 2
	d.Pump(0)
	got := commitsByPartition(t, d.Ready())
	d.CommitDone(0, got[1].ID, ErrPartitionFailed)
	cat.moved = map[uint32]uint64{1: 3}
	now := int64(DefaultFailureBackoffNs) + 1 // past the backoff, within the hold
	d.Add(now, rec(2, "t", 1, 1))
	d.Pump(now)
	got = commitsByPartition(t, d.Ready())
	if c, ok := got[1]; len(got) != 1 || !ok || len(c.Records) != 2 || d.Stats().Rerouted != 0 {
		t.Fatalf("seqs 1 and 2 should go to partition 1's new owner: %+v (rerouted %d)", got, d.Stats().Rerouted)
	}
}
