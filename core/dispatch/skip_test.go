package dispatch

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/wal"
)

// A partition stuck behind a dead owner holds the checkpoint, but the records of the
// others are named done in the skip-set; a restart that restores it commits only the
// stuck partition's records again.
func TestSkipSetBoundsRedispatch(t *testing.T) {
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: 3, caughtUp: true}
	d := New(Config{LingerNs: -1}, cat, 1)
	var recs []wal.Record
	for s := uint64(1); s <= 9; s++ {
		recs = append(recs, rec(s, "t", 1, uint32(s%3)))
		d.Add(0, recs[len(recs)-1])
	}
	d.Pump(0)
	rd := d.Ready()
	for _, c := range rd.Commits {
		var err error
		if c.Key.Partition == 1 { // seqs 1, 4, 7
			err = errors.New("owner down")
		}
		d.CommitDone(0, c.ID, err)
	}
	d.Pump(0)
	rd = d.Ready()
	want := wal.Skip{Below: 10, Pending: []wal.SkipPending{{Incarnation: 1, Partition: 1, From: 1}}}
	if d.Checkpoint() != 1 || rd.Skip == nil || !rd.Skip.Equal(want) {
		t.Fatalf("checkpoint %d skip %+v, want %+v", d.Checkpoint(), rd.Skip, want)
	}
	// Restart from the durable checkpoint 1 and that skip-set.
	d2 := New(Config{LingerNs: -1}, cat, 1)
	d2.Restore(*rd.Skip)
	for _, r := range recs {
		d2.Add(0, r)
	}
	d2.Pump(0)
	rd = d2.Ready()
	if len(rd.Commits) != 1 || rd.Commits[0].Key.Partition != 1 || len(rd.Commits[0].Records) != 3 {
		t.Fatalf("want only partition 1's seqs 1, 4, 7 again: %+v", rd.Commits)
	}
	d2.CommitDone(0, rd.Commits[0].ID, nil)
	d2.Pump(0)
	if rd := d2.Ready(); d2.Checkpoint() != 10 || d2.Stats().Restored != 6 || rd.Skip == nil || !rd.Skip.Equal(wal.Skip{}) {
		t.Fatalf("checkpoint %d stats %+v skip %+v", d2.Checkpoint(), d2.Stats(), rd.Skip)
	}
}

// Past CheckpointPendingMax partitions with work, Below stops at the first seq of the
// next one: the skip-set stays in its slot and still claims nothing that is not done.
func TestSkipSetPendingBound(t *testing.T) {
	parts := uint32(wal.CheckpointPendingMax + 3)
	cat := &fakeCatalog{topics: map[string]uint64{"t": 1}, parts: parts, caughtUp: true}
	d := New(Config{LingerNs: -1}, cat, 1)
	seq := uint64(1)
	for p := range parts { // one record per partition, then a done one
		d.Add(0, rec(seq, "t", 1, p))
		seq++
	}
	d.Pump(0)
	rd := d.Ready()
	for _, c := range rd.Commits {
		if c.Records[0].Seq == 1 {
			d.CommitDone(0, c.ID, nil) // only seq 1 is done: the checkpoint moves to 2
		}
	}
	d.Pump(0)
	rd = d.Ready()
	if rd.Skip == nil || len(rd.Skip.Pending) != wal.CheckpointPendingMax || rd.Skip.Below != 2+uint64(wal.CheckpointPendingMax) {
		t.Fatalf("skip %+v", rd.Skip)
	}
	if !rd.Skip.Valid() {
		t.Fatalf("invalid skip")
	}
}

// skipRun drives a dispatcher with random records, answers, failures, timeouts, reroutes,
// topic deletes and crashes. After every step it checks that the newest skip-set and the
// checkpoint name only records that are done (their commit answered durable, or their
// incarnation gone: discarded), and after a crash, which restores the newest skip-set,
// that no record it names is ever sent again.
type skipRun struct {
	cat      *fakeCatalog
	cfg      Config
	d        *Dispatcher
	now      int64
	next     uint64
	recs     []wal.Record
	open     []Commit
	done     map[uint64]bool // answered durable, at any time
	ckpt     uint64          // the newest checkpoint given out
	skip     wal.Skip        // the newest skip-set given out
	noResend map[uint64]bool // named done by the skip-set a restart restored
}

func (s *skipRun) step(t *rapid.T) {
	s.d.Pump(s.now)
	rd := s.d.Ready()
	for {
		s.take(t, rd)
		if len(rd.Barriers) == 0 {
			break
		}
		for _, b := range rd.Barriers {
			s.d.BarrierDone(s.now, b, nil)
		}
		rd = s.d.Ready()
	}
	for _, r := range s.recs {
		if r.Seq < s.ckpt || s.skip.Done(&r) {
			if !s.done[r.Seq] && s.cat.topics[r.Topic] == r.Incarnation {
				t.Fatalf("seq %d (partition %d) is passed (checkpoint %d, skip %+v) but neither committed nor discarded", r.Seq, r.Partition, s.ckpt, s.skip)
			}
		}
	}
}

func (s *skipRun) take(t *rapid.T, rd Ready) {
	for _, c := range rd.Commits {
		for _, r := range c.Records {
			if s.noResend[r.Seq] {
				t.Fatalf("seq %d sent again although the restored skip-set named it done", r.Seq)
			}
		}
	}
	s.open = append(s.open, rd.Commits...)
	if rd.Checkpoint != 0 {
		s.ckpt = rd.Checkpoint
	}
	if rd.Skip != nil {
		if !rd.Skip.Valid() || rd.Skip.Below > s.next {
			t.Fatalf("invalid skip %+v (next %d)", rd.Skip, s.next)
		}
		s.skip = *rd.Skip
	}
}

func (s *skipRun) answer(t *rapid.T) {
	if len(s.open) == 0 {
		t.Skip("nothing in flight")
	}
	i := rapid.IntRange(0, len(s.open)-1).Draw(t, "i")
	c := s.open[i]
	s.open = append(s.open[:i], s.open[i+1:]...)
	if rapid.Bool().Draw(t, "ok") {
		if _, inflight := s.d.inflight[c.ID]; inflight {
			for _, r := range c.Records {
				s.done[r.Seq] = true
			}
		}
		s.d.CommitDone(s.now, c.ID, nil)
	} else {
		s.d.CommitDone(s.now, c.ID, errors.New("fail"))
	}
	s.step(t)
}

// crash restarts from the newest checkpoint and skip-set (the WAL may make an older one
// durable; any one given out is as sound). Commits in flight are lost, answers included.
func (s *skipRun) crash(t *rapid.T) {
	s.open = nil
	s.d = New(s.cfg, s.cat, s.ckpt)
	s.d.Restore(s.skip)
	for _, r := range s.recs {
		if r.Seq < s.ckpt {
			continue
		}
		if s.skip.Done(&r) {
			s.noResend[r.Seq] = true
		}
		s.d.Add(s.now, r)
	}
	s.step(t)
}

func TestSkipSetProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := &skipRun{
			cat:  &fakeCatalog{topics: map[string]uint64{"a": 1, "b": 1}, parts: 4, caughtUp: true, dead: map[uint64]bool{}},
			cfg:  Config{BaseWindow: 4, WindowMax: 32, LookaheadWindows: 2, FanoutMax: 3, TargetPerPartition: 2},
			next: 1, ckpt: 1, done: map[uint64]bool{}, noResend: map[uint64]bool{},
		}
		s.d = New(s.cfg, s.cat, 1)
		rt.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				topic := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "topic")
				r := rec(s.next, topic, s.cat.topics[topic], uint32(rapid.IntRange(0, 3).Draw(t, "part")))
				s.next++
				s.recs = append(s.recs, r)
				s.d.Add(s.now, r)
				s.step(t)
			},
			"answer": s.answer,
			"time": func(t *rapid.T) {
				s.now += rapid.Int64Range(1, 2*DefaultFailureBackoffNs).Draw(t, "dt")
				s.d.Tick(s.now)
				s.step(t)
			},
			"membership": func(t *rapid.T) {
				o := uint64(rapid.IntRange(1, 3).Draw(t, "owner"))
				s.cat.dead[o] = !s.cat.dead[o]
				s.step(t)
			},
			"delete": func(t *rapid.T) {
				s.cat.topics[rapid.SampledFrom([]string{"a", "b"}).Draw(t, "topic")]++
				s.step(t)
			},
			"crash": s.crash,
		})
		// Heal: every record not done is committed in the end (the skip-set hides no work).
		clear(s.cat.dead)
		for round := 0; round < 1000 && (len(s.d.held) > 0 || len(s.open) > 0); round++ {
			s.now += DefaultCommitTimeoutNs
			s.d.Tick(s.now)
			s.step(rt)
			for len(s.open) > 0 {
				c := s.open[0]
				s.open = s.open[1:]
				if _, inflight := s.d.inflight[c.ID]; inflight {
					for _, r := range c.Records {
						s.done[r.Seq] = true
					}
				}
				s.d.CommitDone(s.now, c.ID, nil)
			}
		}
		if len(s.d.held) != 0 || s.d.Checkpoint() != s.next {
			rt.Fatalf("did not drain: %d left, checkpoint %d, next %d", len(s.d.held), s.d.Checkpoint(), s.next)
		}
	})
}
