package meta

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// A forwarded proposal is applied at most once. A follower forwards a write to the leader
// (core/node forward.go), and the leader proposes whatever reaches it; the network may
// deliver a copy of the request again, long after the first, to the same leader in a
// later term or to another leader. A leader's memory cannot tell such a copy from a new
// request, so the log does: the entry of a forwarded proposal carries its ProposalID, and
// the replicated state keeps, per member that forwards (a forwarder), the ids applied for
// its newest process. The apply refuses a copy whatever leader proposed it and whenever;
// every replica refuses it alike, the forwarders are in the snapshot (field 'forwards',
// omitted when empty), and a later leader starts from them.
//
// The rules, at the apply of the entry at index i of a forward (origin, nonce, seq,
// commit), are in forwardVerdict; in short:
//
//   - commit < i, or the entry is invalid: the origin's replica held index 'commit'
//     committed when it sent the request, and a leader appends after every committed
//     entry;
//   - the origin forgotten or removed: refused (its forwarder is dropped with it);
//   - a nonce other than the forwarder's: the request of another process of the member.
//     A member's processes are ordered by their 'commit': a new one recovers at least the
//     commit index its predecessor held durable, which is at least every 'commit' that
//     one sent; and it soon learns a higher one from the leader (above the entries its
//     predecessor's forwards made). A forward naming a commit above the forwarder's is of
//     a newer process and replaces the forwarder; one naming none above is refused
//     (ErrStale): a copy from an earlier process, or a new process that forwarded before
//     its replica moved past its predecessor's (its client retries, and soon passes). As
//     a forwarder is only replaced by one naming a strictly higher commit, a copy of a
//     request of any earlier process names one below the forwarder's and is refused,
//     however many processes came between, whatever the order of the deliveries;
//   - the forwarder's nonce: a seq applied before is refused (ErrDuplicate if it was
//     applied without an error: the write is done; ErrStale if its apply failed); so is a
//     seq at or below the floor (ForwardSeqsMax seqs are kept, the floor rises past the
//     ones dropped: a request delayed past ForwardSeqsMax later ones of its process is
//     refused, which is never a second apply).
//
// That no id applies twice never rests on the processes being ordered right: the order
// only decides which requests are admitted, and a copy of an applied one is refused
// whatever it. A refusal changes nothing but the count of commands applied, and no later
// entry lifts it, so the leader also answers at once a copy its state already refuses
// (Propose), without needing fresh state.
//
// A forward's other refusals on the leader go through the log too, so that no copy
// applies the command after its client was told it failed: the topics' check is left to
// the apply (a leader refuses a plain proposal on fresh state at once), and a guard's
// refusal (membershipGuard) is proposed as an entry marked refused, which only records
// the id as failed; the leader answers the guard's error once that entry applied. What
// the leader answers before any entry, for want of one, is not recorded: not the leader,
// over ProposalsMax, raft refusing the entry (503 and 429, retried by the client); a
// copy of such a forward may still apply once, later.

// ProposalID names one forwarded proposal.
type ProposalID struct {
	Origin uint64 // the member that forwarded it (the sender the transport authenticated)
	Nonce  uint64 // the origin's process: drawn at random per process, never 0
	Seq    uint64 // the request within the process: increasing, never 0
	// Commit: the commit index the origin's replica held durable when it sent the request
	// (Store.DurableCommit: at least its applied index).
	Commit uint64
}

// IsZero reports whether id names no forward (a proposal made on the leader).
func (id ProposalID) IsZero() bool { return id == ProposalID{} }

// Bounds of the forwarders.
const (
	// ForwardSeqsMax: the seqs kept per forwarder; older ones are refused by the floor.
	ForwardSeqsMax = 32
	// ForwardersMax: the forwarders kept (members forward; forgotten ones are dropped). A
	// forward from a new origin past it is refused (ErrBusy).
	ForwardersMax = MembersMax
)

var (
	// ErrDuplicate answers a copy of a forwarded proposal applied before without an
	// error: the write is done, and this copy changed nothing.
	ErrDuplicate = errors.New("meta: a copy of this forwarded proposal was applied before")
	// ErrStale answers a forwarded proposal refused because a copy may have been applied
	// before (its apply failed, or it is too old to tell): it changed nothing; retry.
	ErrStale = errors.New("meta: a forwarded proposal refused: a copy may have been applied before")
	// errRecorded is the apply of a forward refused before the log: its leader answers
	// the refusal it stored (proposal.refused).
	errRecorded = errors.New("meta: a forward refused by the leader, recorded")
)

// forwarder is what the state keeps of a member that forwards: its newest process's
// nonce, the highest commit index its forwards named, and the seqs applied.
type forwarder struct {
	Origin uint64       `json:"origin"`
	Nonce  uint64       `json:"nonce"`
	Commit uint64       `json:"commit"`
	Floor  uint64       `json:"floor,omitempty"` // every seq at or below it is refused
	Seqs   []appliedSeq `json:"seqs"`            // above Floor, ascending, ForwardSeqsMax at most
}

// appliedSeq is one applied forward of a forwarder.
type appliedSeq struct {
	Seq    uint64 `json:"seq"`
	Failed bool   `json:"failed,omitempty"` // applied with an error: it changed nothing
}

func cmpSeq(a appliedSeq, seq uint64) int { return cmp.Compare(a.Seq, seq) }

// applyProposal applies a decoded entry at index: a forwarded one only if forwardVerdict
// admits its id, which the state then remembers.
func (m *machine) applyProposal(p proposalEntry, index uint64) (result, error) {
	if p.Fwd.IsZero() {
		return m.apply(p.Cmd, index, p.NowNs)
	}
	if p.Fwd.Commit >= index {
		m.commands++
		return result{}, invalid("a forward names index %d committed, at entry %d", p.Fwd.Commit, index)
	}
	if err := m.forwardVerdict(p.Fwd); err != nil {
		m.commands++
		return result{}, err
	}
	if p.Refused {
		m.commands++
		m.noteForward(p.Fwd, true)
		return result{}, errRecorded
	}
	res, err := m.apply(p.Cmd, index, p.NowNs)
	m.noteForward(p.Fwd, err != nil)
	return res, err
}

// forwardVerdict refuses a forward whose id a copy may have used before (see above), or
// admits it (nil). It changes nothing; a refusal stays one at every later index.
func (m *machine) forwardVerdict(id ProposalID) error {
	if mutNoForwardDedupe {
		return nil
	}
	f, ok := m.forwards[id.Origin]
	switch {
	case m.forgotten[id.Origin]:
		return fmt.Errorf("%w: its member %d is forgotten", ErrStale, id.Origin)
	case !ok && len(m.forwards) >= ForwardersMax:
		return fmt.Errorf("%w: %d members forward already", ErrBusy, ForwardersMax)
	case !ok:
		return nil
	case f.Nonce != id.Nonce && id.Commit <= f.Commit:
		return fmt.Errorf("%w: member %d forwarded from a process that knew index %d, "+
			"after it from one that knew %d", ErrStale, id.Origin, id.Commit, f.Commit)
	case f.Nonce != id.Nonce:
		return nil // a newer process of the member
	case id.Seq <= f.Floor:
		return fmt.Errorf("%w: request %d is older than the %d its process forwarded since",
			ErrStale, id.Seq, ForwardSeqsMax)
	}
	i, found := slices.BinarySearchFunc(f.Seqs, id.Seq, cmpSeq)
	switch {
	case !found:
		return nil
	case f.Seqs[i].Failed:
		return fmt.Errorf("%w: its first copy was applied and failed", ErrStale)
	}
	return ErrDuplicate
}

// noteForward remembers an admitted forward applied (failed: with an error). A forward
// that removed its own member (a drained node's RemoveMember) leaves nothing.
func (m *machine) noteForward(id ProposalID, failed bool) {
	if m.forgotten[id.Origin] {
		delete(m.forwards, id.Origin)
		return
	}
	f, ok := m.forwards[id.Origin]
	if !ok || f.Nonce != id.Nonce {
		f = forwarder{Origin: id.Origin, Nonce: id.Nonce}
	}
	f.Commit = max(f.Commit, id.Commit)
	i, found := slices.BinarySearchFunc(f.Seqs, id.Seq, cmpSeq)
	if found || id.Seq <= f.Floor { // admitted again: only without the dedupe (the mutation)
		m.forwards[id.Origin] = f
		return
	}
	f.Seqs = slices.Insert(f.Seqs, i, appliedSeq{Seq: id.Seq, Failed: failed})
	if len(f.Seqs) > ForwardSeqsMax {
		f.Floor = f.Seqs[0].Seq
		f.Seqs = slices.Delete(f.Seqs, 0, 1)
	}
	m.forwards[id.Origin] = f
}

// sortedForwarders lists the forwarders by origin (the snapshot's order).
func (m *machine) sortedForwarders() []forwarder {
	out := make([]forwarder, 0, len(m.forwards))
	for _, id := range slices.Sorted(maps.Keys(m.forwards)) {
		out = append(out, m.forwards[id])
	}
	return out
}

// decodeForwarders checks the snapshot's forwarders (by origin, of no forgotten member,
// naming indexes below the snapshot's, seqs ascending above the floor and within the
// bound) and adds them.
func decodeForwarders(m *machine, fs []forwarder, index uint64) error {
	if len(fs) > ForwardersMax {
		return errBody
	}
	for i, f := range fs {
		ok := f.Origin != 0 && !m.forgotten[f.Origin] && (i == 0 || f.Origin > fs[i-1].Origin) &&
			f.Nonce != 0 && f.Commit < index && len(f.Seqs) > 0 && len(f.Seqs) <= ForwardSeqsMax
		for j, s := range f.Seqs {
			ok = ok && s.Seq > f.Floor && (j == 0 || s.Seq > f.Seqs[j-1].Seq)
		}
		if !ok {
			return errBody
		}
		m.forwards[f.Origin] = f
	}
	return nil
}
