package walsim

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/invariants"
)

// model is what the clients were told and what the checks compare against.
type model struct {
	nextToken uint64
	pending   map[uint64]pendingAppend // token -> unanswered append
	appended  map[uint64][][]byte      // seq -> every payload ever staged with it
	acked     map[uint64][]byte        // seq -> payload, acknowledged, not yet below the durable checkpoint
	settled   map[uint64]bool          // seqs present in or known absent from the WAL: dispatchable
	wanted    uint64                   // the checkpoint the stand-in dispatcher last set
	dispatch  uint64                   // highest checkpoint ever set (invariant 5's bound)
	imgCkpt   uint64                   // durable checkpoint at the last check (must not go back)
}

type pendingAppend struct {
	client  int
	seq     uint64 // 0 when not staged
	payload []byte
}

func newModel() model {
	return model{pending: map[uint64]pendingAppend{}, appended: map[uint64][][]byte{},
		acked: map[uint64][]byte{}, settled: map[uint64]bool{}}
}

// clientAppend: a client sends its next append (if the process is up) and waits.
func (u *run) clientAppend(c int) {
	if u.healing {
		return
	}
	if !u.up {
		u.s.At(u.s.Now()+u.o.RestartNs, event{kind: evAppend, client: c})
		return
	}
	m := &u.model
	m.nextToken++
	p := make([]byte, 1+u.r.Intn(u.o.PayloadMax))
	_, _ = u.r.Read(p) // a seeded generator never fails
	seq := u.log.NextSeq()
	u.stats.Appends++
	m.pending[m.nextToken] = pendingAppend{client: c, payload: p}
	u.record('a', m.nextToken, uint64(c), uint64(len(p)))
	u.log.Append(u.s.Now(), m.nextToken, wal.Record{Topic: "sim", Partition: uint32(c % 3), Incarnation: 1, Payload: p})
	if u.log.NextSeq() == seq+1 { // staged: from now on it may reach the disk
		m.appended[seq] = append(m.appended[seq], p)
		pa := m.pending[m.nextToken]
		pa.seq = seq
		m.pending[m.nextToken] = pa
	}
	u.drain()
}

func (m *model) answered(u *run, d wal.AppendDone) {
	pa, ok := m.pending[d.Token]
	if !ok {
		u.violate(fmt.Errorf("protocol: answer for unknown or already answered token %d", d.Token))
		return
	}
	delete(m.pending, d.Token)
	if d.Err == nil {
		if d.Seq != pa.seq {
			u.violate(fmt.Errorf("protocol: token %d acknowledged at seq %d, staged at %d", d.Token, d.Seq, pa.seq))
		}
		u.stats.Acked++
		m.acked[d.Seq] = pa.payload
		m.settled[d.Seq] = true
		u.record('k', d.Token, d.Seq)
	} else {
		u.stats.Failed++
		u.record('e', d.Token)
	}
	if errors.Is(d.Err, wal.ErrNoSpace) {
		// Never written (the WAL cut back what the failed write may have stored, and
		// synced the cut): recovery must never return it, and its seq is given again.
		u.stats.NoSpaceRefused++
		m.appended[pa.seq] = slices.DeleteFunc(m.appended[pa.seq], func(p []byte) bool { return bytes.Equal(p, pa.payload) })
	}
	if !u.healing {
		next := u.think()
		switch {
		case errors.Is(d.Err, wal.ErrNoSpace):
			next += wal.NoSpaceRetryNs // a client honouring the node's Retry-After
		case d.Err != nil:
			next += errorBackoffNs // a client backs off on errors (think time may be 0)
		}
		u.s.At(next, event{kind: evAppend, client: pa.client})
	}
}

// errorBackoffNs is how long a client waits before appending again after a failed
// append: without it, clients refused while the WAL recovers spend a seed's steps on
// refusals at one instant (seed 8 acknowledged 1 append of 5,687).
const errorBackoffNs = 1_000_000

// loseUnanswered: the process died; its clients see their requests time out and go on.
func (m *model) loseUnanswered(u *run) {
	for _, tok := range sortedKeys(m.pending) {
		u.stats.Ambiguous++
		if !u.healing {
			u.s.At(u.think()+u.o.RestartNs, event{kind: evAppend, client: m.pending[tok].client})
		}
		delete(m.pending, tok)
	}
}

// recovered checks what recovery returned against what was promised.
func (m *model) recovered(u *run, rec *wal.Recovery) {
	u.record('r', rec.Checkpoint, rec.NextSeq, uint64(len(rec.Records)), uint64(rec.CorruptSkip))
	got := map[uint64][]byte{}
	prev := uint64(0)
	for _, r := range rec.Records {
		if r.Seq <= prev {
			u.violate(fmt.Errorf("invariant 3: recovery returned seq %d after %d", r.Seq, prev))
		}
		prev = r.Seq
		if !slices.ContainsFunc(m.appended[r.Seq], func(p []byte) bool { return bytes.Equal(p, r.Payload) }) {
			u.violate(fmt.Errorf("invariant 3: recovery returned seq %d, which was never appended with those bytes", r.Seq))
		}
		got[r.Seq] = r.Payload
	}
	for _, seq := range sortedKeys(m.acked) {
		if seq >= rec.NextSeq {
			u.violate(fmt.Errorf("invariant 1: acked seq %d at or above the recovered next seq %d", seq, rec.NextSeq))
		}
		if seq >= rec.Checkpoint && !bytes.Equal(got[seq], m.acked[seq]) {
			u.violate(fmt.Errorf("invariant 1: acked seq %d not recovered byte for byte (checkpoint %d, decisions %v)", seq, rec.Checkpoint, rec.Decisions))
		}
	}
	if rec.Checkpoint < m.imgCkpt {
		u.violate(fmt.Errorf("invariant 5: recovered checkpoint %d is behind the durable %d (decisions %v)", rec.Checkpoint, m.imgCkpt, rec.Decisions))
	}
	// Everything below the next seq is now either present or gone for good.
	for seq := rec.Checkpoint; seq < rec.NextSeq; seq++ {
		m.settled[seq] = true
	}
	m.wanted = rec.Checkpoint
}

// dispatch is the stand-in dispatcher: it moves the checkpoint to a random point of the
// settled prefix, as if those records had been committed to their partitions.
func (u *run) dispatch() {
	if !u.ready {
		return
	}
	m := &u.model
	end := m.wanted
	for m.settled[end] && end < u.log.NextSeq() {
		end++
	}
	to := m.wanted + uint64(u.r.Intn(int(end-m.wanted)+1))
	if to == m.wanted {
		return
	}
	u.record('p', to)
	m.wanted = to
	m.dispatch = max(m.dispatch, to)
	u.log.SetCheckpoint(u.s.Now(), to)
	u.drain()
}

// check runs the WAL invariants against the disk's durable image.
func (u *run) check() {
	u.stats.Checks++
	m := &u.model
	img := invariants.ReadWALImage(u.d.DurableFiles(), u.logDir())
	if err := invariants.WALNeverZeroCopies(img, m.acked); err != nil {
		u.violate(err)
	}
	if err := invariants.CheckpointNeverPassesWork(img, m.dispatch); err != nil {
		u.violate(err)
	}
	if img.HasCheckpoint {
		if img.Checkpoint < m.imgCkpt {
			u.violate(fmt.Errorf("invariant 5: durable checkpoint went back from %d to %d", m.imgCkpt, img.Checkpoint))
		}
		m.imgCkpt = img.Checkpoint
		for _, seq := range sortedKeys(m.acked) {
			if seq >= img.Checkpoint {
				break
			}
			delete(m.acked, seq) // dispatched and durably checkpointed: no longer the WAL's
		}
	}
}

func (u *run) logDir() string {
	if u.o.WAL.Dir != "" {
		return u.o.WAL.Dir
	}
	return wal.DefaultDir
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m { //narad:sorted
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
