package meta

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Partition moves, as the metastore decides them. A move takes one partition of a topic
// incarnation from its owner (From) to another member (To), under the partition's epoch
// (Epoch), in three entries:
//
//   - StartMove (TopicID, Part, Member = To): the move begins, copying: the destination
//     copies the partition's records at their offsets while the source goes on serving;
//   - FreezeMove (TopicID, Part, Epoch): the source stops taking commits for it, so that
//     the destination can copy the tail and verify it;
//   - CutOverMove (TopicID, Part, Epoch): the destination owns the partition under
//     Epoch+1 and the move ends. Offsets do not change: the destination's copy holds the
//     records at the offsets the source gave them (unlike a forget's empty restart at
//     EpochBase). The epoch is the fence: an owner serves commits of its epoch only.
//
// AbortMove (TopicID, Part) ends a move before its cutover; the source keeps the
// partition under the same epoch. A move also ends when its topic is deleted, and when
// its source or destination is forgotten (the forget reassigns what the member owned).
// One move per partition at a time; its source and destination are live members, the
// destination not draining. Every one of these is checked again at apply: the entry is
// the truth.
//
// The leader's controller proposes StartMove (rebalance_control.go) and AbortMove (an end
// marked dead), an admin StartMove and AbortMove by hand; the destination's node proposes
// FreezeMove and CutOverMove as its copy goes (core/node move.go). The state is
// replicated, kept in the snapshot (field "moves"), and held to its rules by a rapid
// property and the metastore simulator.

// MoveState is where a move is.
type MoveState uint8

// The states of a move in progress.
const (
	MoveCopying MoveState = iota + 1 // the destination copies; the source takes commits
	MoveFrozen                       // the source takes no commits; the tail is copied
)

func (s MoveState) String() string {
	switch s {
	case MoveCopying:
		return "copying"
	case MoveFrozen:
		return "frozen"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Move is a partition on its way from one member to another.
type Move struct {
	TopicID   uint64    `json:"topic"`
	Partition uint32    `json:"partition"`
	From      uint64    `json:"from"`
	To        uint64    `json:"to"`
	Epoch     uint32    `json:"epoch"` // the partition's epoch while it moves
	State     MoveState `json:"state"`
	// Started is the log index of the StartMove that began it: it tells this move from a
	// later one of the same partition, between the same members at the same epoch (an
	// abort and a new start that a node applies in one batch). 0 in a snapshot written
	// before it existed.
	Started uint64 `json:"started,omitempty"`
}

// ErrNoMove answers a move command for a partition with no move in progress (or with
// another epoch or state than the command expects).
var ErrNoMove = errors.New("meta: no such move")

type moveKey struct {
	topic uint64
	part  uint32
}

// isMoveKind reports whether k is one of the move commands (the system's).
func isMoveKind(k CommandKind) bool {
	return k == StartMove || k == FreezeMove || k == CutOverMove || k == AbortMove
}

// checkMoveFields validates a move command without looking at the state.
func (c Command) checkMoveFields() error {
	switch {
	case c.TopicID == 0:
		return invalid("a move command needs a topic id")
	case c.Addr != "" || c.Alive:
		return invalid("a move command takes no address")
	case c.Kind == StartMove && (c.Member == 0 || c.Epoch != 0):
		return invalid("move-start takes a destination member and no epoch")
	case c.Kind != StartMove && c.Member != 0:
		return invalid("%s takes no member", c.Kind)
	case c.Kind == AbortMove && c.Epoch != 0:
		return invalid("move-abort takes no epoch")
	}
	return nil
}

// checkMove answers a move command against the state.
func (m *machine) checkMove(c Command) error {
	name, ok := m.byID[c.TopicID]
	if !ok {
		return ErrNotFound
	}
	owners := m.owners[c.TopicID]
	if c.Part >= m.byName[name].Partitions || int(c.Part) >= len(owners) {
		return invalid("partition %d of topic %q has no owner to move it from", c.Part, name)
	}
	mv, moving := m.moves[moveKey{c.TopicID, c.Part}]
	switch c.Kind {
	case StartMove:
		return m.checkStart(c, owners[c.Part], moving)
	case FreezeMove:
		if !moving || mv.State != MoveCopying || mv.Epoch != c.Epoch {
			return fmt.Errorf("%w: partition %d of topic %q copying at epoch %d", ErrNoMove, c.Part,
				name, c.Epoch)
		}
	case CutOverMove:
		if !moving || mv.State != MoveFrozen || mv.Epoch != c.Epoch {
			return fmt.Errorf("%w: partition %d of topic %q frozen at epoch %d", ErrNoMove, c.Part,
				name, c.Epoch)
		}
	case AbortMove:
		if !moving {
			return fmt.Errorf("%w: partition %d of topic %q", ErrNoMove, c.Part, name)
		}
	}
	return nil
}

// checkStart: no move of the partition yet; its owner and the destination are live
// members, distinct, and the destination does not drain.
func (m *machine) checkStart(c Command, from uint64, moving bool) error {
	to, known := m.members[c.Member]
	src := m.members[from]
	switch {
	case moving:
		return fmt.Errorf("%w: partition %d of topic %d moves already", ErrGuard, c.Part, c.TopicID)
	case !known:
		return ErrNoMember
	case c.Member == from:
		return invalid("member %d owns partition %d already", c.Member, c.Part)
	case !to.Alive || to.Draining:
		return fmt.Errorf("%w: destination: member %d is not a live member that takes partitions",
			ErrGuard, c.Member)
	case !src.Alive:
		return fmt.Errorf("%w: source: member %d, the owner, is not alive", ErrGuard, from)
	}
	return nil
}

// applyMove applies a checked move command, the entry at index.
func (m *machine) applyMove(c Command, index uint64) {
	k := moveKey{c.TopicID, c.Part}
	switch c.Kind {
	case StartMove:
		m.moves[k] = Move{TopicID: c.TopicID, Partition: c.Part, From: m.owners[c.TopicID][c.Part],
			To: c.Member, Epoch: m.epoch(c.TopicID, c.Part), State: MoveCopying, Started: index}
	case FreezeMove:
		mv := m.moves[k]
		mv.State = MoveFrozen
		m.moves[k] = mv
	case CutOverMove:
		mv := m.moves[k]
		next := mv.Epoch + 1
		if mutCutOverSameEpoch {
			next = mv.Epoch
		}
		m.setOwner(c.TopicID, c.Part, mv.To, next)
		ce := slices.Clone(m.cutEpochs[c.TopicID])
		ce = append(ce, make([]uint32, max(0, int(c.Part)+1-len(ce)))...)
		ce[c.Part] = next
		m.cutEpochs[c.TopicID] = ce
		delete(m.moves, k)
	case AbortMove:
		delete(m.moves, k)
	}
}

// setOwner gives partition p of topic topicID to owner under epoch (cloning the slices:
// an older topic value keeps its own).
func (m *machine) setOwner(topicID uint64, p uint32, owner uint64, epoch uint32) {
	owners := slices.Clone(m.owners[topicID])
	owners[p] = owner
	m.owners[topicID] = owners
	ep := slices.Clone(m.epochs[topicID])
	ep = append(ep, make([]uint32, max(0, int(p)+1-len(ep)))...)
	ep[p] = epoch
	m.epochs[topicID] = ep
}

// endMoves ends the moves for which drop is true (a deleted topic's, a forgotten
// member's).
func (m *machine) endMoves(drop func(Move) bool) {
	maps.DeleteFunc(m.moves, func(_ moveKey, mv Move) bool { return drop(mv) })
}

// Moves lists the moves in progress, by topic id then partition.
func (s *Store) Moves() []Move { return s.sm.sortedMoves() }

// CutOver reports whether partition p of incarnation topicID holds its current epoch by
// a move's cutover (not by a forget's reassignment, which starts it empty): a move's
// destination then serves the copy it made (core/node move.go).
func (s *Store) CutOver(topicID uint64, p uint32) bool {
	ce := s.sm.cutEpochs[topicID]
	return int(p) < len(ce) && ce[p] != 0 && ce[p] == s.sm.epoch(topicID, p)
}

// MoveOf returns the move of partition p of incarnation topicID, if one is in progress.
func (s *Store) MoveOf(topicID uint64, p uint32) (Move, bool) {
	mv, ok := s.sm.moves[moveKey{topicID, p}]
	return mv, ok
}

func (m *machine) sortedMoves() []Move {
	return slices.SortedFunc(maps.Values(m.moves), func(a, b Move) int {
		return cmp.Or(cmp.Compare(a.TopicID, b.TopicID), cmp.Compare(a.Partition, b.Partition))
	})
}

// validMove checks a move of a snapshot against the state it is loaded into.
func (m *machine) validMove(mv Move) bool {
	owners := m.owners[mv.TopicID]
	_, from := m.members[mv.From]
	_, to := m.members[mv.To]
	return int(mv.Partition) < len(owners) && owners[mv.Partition] == mv.From && from && to &&
		mv.From != mv.To && mv.Epoch == m.epoch(mv.TopicID, mv.Partition) &&
		(mv.State == MoveCopying || mv.State == MoveFrozen)
}
