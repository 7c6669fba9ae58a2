package dispatch

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/wal"
)

type fakeCatalog struct {
	topics   map[string]uint64 // name -> incarnation
	parts    uint32
	caughtUp bool
	dead     map[uint64]bool   // owner -> dead; partition p is owned by member p%3+1
	moved    map[uint32]uint64 // partition -> another owner (a forget reassigned it)
}

func (c *fakeCatalog) Owner(_ uint64, p uint32) (uint64, bool) {
	o := uint64(p%3 + 1)
	if to, ok := c.moved[p]; ok {
		o = to
	}
	return o, c.dead[o]
}

func (c *fakeCatalog) Topic(name string) (uint64, uint32, bool) {
	id, ok := c.topics[name]
	return id, c.parts, ok
}
func (c *fakeCatalog) CaughtUp() bool { return c.caughtUp }

func rec(seq uint64, topic string, inc uint64, part uint32) wal.Record {
	return wal.Record{Seq: seq, Topic: topic, Incarnation: inc, Partition: part, Payload: []byte("x")}
}

func TestStuckPartitionDoesNotBlockOthers(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 3, caughtUp: true}
	d := New(Config{LingerNs: -1}, cat, 1)
	for s := uint64(1); s <= 6; s++ {
		d.Add(0, rec(s, "t", 1, uint32(s%3)))
	}
	d.Pump(0)
	rd := d.Ready()
	if len(rd.Commits) != 3 {
		t.Fatalf("want one commit per partition, got %d", len(rd.Commits))
	}
	// Partition 1 (seqs 1, 4) fails; partitions 2 and 0 succeed.
	for _, c := range rd.Commits {
		var err error
		if c.Key.Partition == 1 {
			err = errors.New("owner down")
		}
		d.CommitDone(0, c.ID, err)
	}
	d.Pump(0)
	if rd := d.Ready(); rd.Checkpoint != 0 || len(rd.Commits) != 0 {
		t.Fatalf("checkpoint must stay at the stuck seq 1 and the failed bucket back off: %+v", rd)
	}
	if d.Checkpoint() != 1 {
		t.Fatalf("checkpoint %d", d.Checkpoint())
	}
	at, ok := d.NextDeadline()
	if !ok || at != DefaultFailureBackoffNs {
		t.Fatalf("backoff deadline %d %v", at, ok)
	}
	d.Tick(at)
	d.Pump(at)
	rd = d.Ready()
	if len(rd.Commits) != 1 || len(rd.Commits[0].Records) != 2 {
		t.Fatalf("retry should resend seqs 1 and 4 only: %+v", rd.Commits)
	}
	d.CommitDone(at, rd.Commits[0].ID, nil)
	d.Pump(at)
	if rd := d.Ready(); rd.Checkpoint != 7 {
		t.Fatalf("all done: checkpoint %d, want 7", rd.Checkpoint)
	}
}

func TestDiscardNeedsConfirmation(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 2}, parts: 3, caughtUp: true}
	d := New(Config{LingerNs: -1}, cat, 1)
	d.Add(0, rec(1, "t", 1, 0)) // incarnation 1 was deleted; 2 is current
	d.Add(0, rec(2, "t", 2, 0))
	d.Pump(0)
	rd := d.Ready()
	if len(rd.Commits) != 1 || len(rd.Barriers) != 1 {
		t.Fatalf("want the live record committed and a barrier for the stale one: %+v", rd)
	}
	d.CommitDone(0, rd.Commits[0].ID, nil)
	d.Pump(0)
	if d.Checkpoint() != 1 {
		t.Fatalf("nothing discarded before the barrier: checkpoint %d", d.Checkpoint())
	}
	cat.caughtUp = false
	d.BarrierDone(0, rd.Barriers[0], nil)
	if d.Checkpoint() != 1 {
		t.Fatalf("a replica that is not caught up must not discard")
	}
	d.Tick(DefaultFailureBackoffNs)
	d.Pump(DefaultFailureBackoffNs)
	rd = d.Ready()
	cat.caughtUp = true
	d.BarrierDone(DefaultFailureBackoffNs, rd.Barriers[0], nil)
	if d.Checkpoint() != 3 || d.Stats().Discarded != 1 {
		t.Fatalf("confirmed discard: checkpoint %d stats %+v", d.Checkpoint(), d.Stats())
	}
}

// TestDispatcherProperties: random records, answers, failures, timeouts and topic
// deletes. Invariants after every step: the checkpoint never passes a record that was
// neither committed nor discarded; never two commits in flight for one partition nor
// more than FanoutMax; a record is discarded only when its incarnation is gone. At the
// end, with all failures stopped, everything is done and the checkpoint is past it.
func TestDispatcherProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cat := &fakeCatalog{topics: map[string]uint64{"a": 1, "b": 1}, parts: 4, caughtUp: true, dead: map[uint64]bool{}}
		cfg := Config{BaseWindow: 4, WindowMax: 32, LookaheadWindows: 2, FanoutMax: 3, TargetPerPartition: 2}
		d := New(cfg, cat, 1)
		now := int64(0)
		next := uint64(1)
		done := map[uint64]bool{}
		gone := map[uint64]bool{} // records whose incarnation was deleted when added or later
		var open []Commit
		out := outstanding{}
		sent := func(cs []Commit) {
			open = append(open, cs...)
			out.sent(rt, now, cs)
		}
		step := func() {
			out.expire(now)
			d.Pump(now)
			rd := d.Ready()
			sent(rd.Commits)
			for len(rd.Barriers) > 0 {
				d.BarrierDone(now, rd.Barriers[0], nil)
				rd2 := d.Ready()
				sent(rd2.Commits)
				rd.Barriers = append(rd.Barriers[1:], rd2.Barriers...)
			}
			checkInvariants(rt, d, open, done, cfg)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				topic := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "topic")
				r := rec(next, topic, cat.topics[topic], uint32(rapid.IntRange(0, 3).Draw(t, "part")))
				next++
				d.Add(now, r)
				step()
			},
			"answer": func(t *rapid.T) {
				if len(open) == 0 {
					t.Skip()
				}
				i := rapid.IntRange(0, len(open)-1).Draw(t, "i")
				c := open[i]
				open = append(open[:i], open[i+1:]...)
				ok := rapid.Bool().Draw(t, "ok")
				delete(out, c.ID)
				if ok {
					if _, inflight := d.inflight[c.ID]; inflight {
						for _, r := range c.Records {
							done[r.Seq] = true
						}
					}
					d.CommitDone(now, c.ID, nil)
				} else {
					d.CommitDone(now, c.ID, errors.New("fail"))
				}
				step()
			},
			"time": func(t *rapid.T) {
				now += rapid.Int64Range(1, 2*DefaultFailureBackoffNs).Draw(t, "dt")
				d.Tick(now)
				step()
			},
			"membership": func(t *rapid.T) {
				o := uint64(rapid.IntRange(1, 3).Draw(t, "owner"))
				cat.dead[o] = !cat.dead[o]
				step()
			},
			"delete": func(t *rapid.T) {
				topic := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "topic")
				cat.topics[topic]++ // delete and recreate: a new incarnation
				step()
			},
		})
		// Heal: answer everything successfully until nothing is left.
		clear(cat.dead)
		for round := 0; round < 1000 && (len(d.held) > 0 || len(open) > 0); round++ {
			now += DefaultCommitTimeoutNs
			d.Tick(now)
			step()
			for _, c := range open {
				if _, inflight := d.inflight[c.ID]; inflight {
					for _, r := range c.Records {
						done[r.Seq] = true
					}
				}
				d.CommitDone(now, c.ID, nil)
				delete(out, c.ID)
			}
			open = nil
		}
		_ = gone
		if len(d.held) != 0 || d.Checkpoint() != next {
			for _, e := range d.held {
				seq := e.rec.Seq
				b := d.buckets[Key{e.rec.Topic, e.rec.Incarnation, e.rec.Partition}]
				rt.Logf("left: seq %d status %d bucket %+v", seq, e.status, b)
			}
			rt.Logf("barrier %d notBefore %d now %d", d.barrierToken, d.barrierNotBefore, now)
			rt.Fatalf("did not drain: %d left, checkpoint %d, next %d", len(d.held), d.Checkpoint(), next)
		}
	})
}

func checkInvariants(t *rapid.T, d *Dispatcher, open []Commit, done map[uint64]bool, cfg Config) {
	if len(d.inflight) > cfg.FanoutMax {
		t.Fatalf("%d commits in flight, max %d", len(d.inflight), cfg.FanoutMax)
	}
	seen := map[Key]bool{}
	for id, b := range d.inflight { //narad:unordered (test)
		if seen[b.key] {
			t.Fatalf("two commits in flight for %+v", b.key)
		}
		seen[b.key] = true
		_ = id
	}
	// Every seq below the checkpoint is committed or was discarded (discarded ones are
	// those whose incarnation the catalog no longer has: not in done).
	for _, e := range d.held {
		if seq := e.rec.Seq; seq < d.Checkpoint() {
			t.Fatalf("checkpoint %d passed seq %d which is still held", d.Checkpoint(), seq)
		}
	}
}

// A partition thinner than the per-partition target waits up to LingerNs for more
// records (one commit is one fdatasync on the owner); one that reaches the target, and
// one whose oldest record has waited long enough, commits at once.
func TestThinPartitionsLingerForFatterCommits(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 2, caughtUp: true}
	cfg := Config{TargetPerPartition: 4, LingerNs: 1000}
	d := New(cfg, cat, 1)
	d.Add(100, rec(1, "t", 1, 0))
	d.Pump(100)
	if rd := d.Ready(); len(rd.Commits) != 0 {
		t.Fatalf("one record committed before its linger: %+v", rd.Commits)
	}
	if at, ok := d.NextDeadline(); !ok || at != 1100 {
		t.Fatalf("linger deadline %d %v, want 1100", at, ok)
	}
	for s := uint64(2); s <= 5; s++ { // partition 1 reaches the target
		d.Add(200, rec(s, "t", 1, 1))
	}
	d.Add(200, rec(6, "t", 1, 0))
	d.Pump(200)
	rd := d.Ready()
	if len(rd.Commits) != 1 || rd.Commits[0].Key.Partition != 1 || len(rd.Commits[0].Records) != 4 {
		t.Fatalf("want partition 1's 4 records at once: %+v", rd.Commits)
	}
	d.CommitDone(300, rd.Commits[0].ID, nil)
	d.Pump(1099)
	if rd := d.Ready(); len(rd.Commits) != 0 {
		t.Fatalf("partition 0 committed before its oldest record waited LingerNs: %+v", rd.Commits)
	}
	d.Tick(1100)
	d.Pump(1100)
	rd = d.Ready()
	if len(rd.Commits) != 1 || len(rd.Commits[0].Records) != 2 {
		t.Fatalf("want partition 0's 2 records at its deadline: %+v", rd.Commits)
	}
	d.Add(1200, rec(7, "t", 1, 0)) // arrives while partition 0's commit is in flight
	d.Pump(1200)
	d.CommitDone(1300, rd.Commits[0].ID, nil)
	d.Pump(1300)
	if rd := d.Ready(); len(rd.Commits) != 0 {
		t.Fatalf("record 7 committed before its linger: %+v", rd.Commits)
	}
	if at, ok := d.NextDeadline(); !ok || at != 2200 {
		t.Fatalf("linger deadline %d %v, want 2200 (record 7 arrived at 1200)", at, ok)
	}
}

// outstanding tracks, from outside the dispatcher, the commits sent and neither answered
// nor past their timeout: no record may be in two of them at once (a reroute must never
// take a record whose commit is in flight).
type outstanding map[uint64]outCommit

type outCommit struct {
	deadline int64
	seqs     []uint64
}

func (o outstanding) sent(t *rapid.T, now int64, cs []Commit) {
	for _, c := range cs {
		oc := outCommit{deadline: now + DefaultCommitTimeoutNs}
		for _, r := range c.Records {
			for id, other := range o { //narad:unordered (test: any hit fails)
				if slices.Contains(other.seqs, r.Seq) {
					t.Fatalf("seq %d sent in commit %d while commit %d holding it is in flight", r.Seq, c.ID, id)
				}
			}
			oc.seqs = append(oc.seqs, r.Seq)
		}
		o[c.ID] = oc
	}
}

func (o outstanding) expire(now int64) {
	maps.DeleteFunc(o, func(_ uint64, c outCommit) bool { return now >= c.deadline })
}
