package meta

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
)

// Member is a node of the cluster as the metastore knows it. Members join through the
// log (JoinMember); the leader marks them dead and alive again through the log
// (SetMemberAlive) from the heartbeats it hears (controller.go), so every replica agrees
// on who is alive at every index, and partition assignment can depend on it.
type Member struct {
	ID    uint64 `json:"id"`
	Addr  string `json:"addr"`
	Alive bool   `json:"alive"`
	// Draining: being decommissioned (decommission.go): it takes no new partitions.
	Draining bool `json:"draining,omitempty"`
}

// Member bounds.
const (
	MembersMax   = 1024
	AddrBytesMax = 256
)

// ErrNoMember answers a member command but JoinMember for a member that never joined.
var ErrNoMember = errors.New("meta: no such member")

// isMemberKind reports whether k is one of the member commands (the system's).
func isMemberKind(k CommandKind) bool {
	return k == JoinMember || k == SetMemberAlive || k == ForgetMember ||
		k == DecommissionMember || k == CancelDecommission || k == RemoveMember || isMoveKind(k) ||
		k == Rebalance
}

func (c Command) checkMember() error {
	switch {
	case c.Name != "" || c.anySetting():
		return invalid("a member command takes no topic fields")
	case isMoveKind(c.Kind):
		return c.checkMoveFields()
	case c.Kind == Rebalance && (c.Member != 0 || c.Addr != "" || c.Alive || c.TopicID != 0 ||
		c.Part != 0 || c.Epoch != 0):
		return invalid("rebalance takes nothing")
	case c.Kind == Rebalance:
		return nil
	case c.TopicID != 0 || c.Part != 0 || c.Epoch != 0:
		return invalid("%s takes no partition", c.Kind)
	case c.Member == 0:
		return invalid("member id must be 1 or more")
	case c.Kind == JoinMember && (c.Addr == "" || len(c.Addr) > AddrBytesMax):
		return invalid("member address must be 1-%d bytes", AddrBytesMax)
	case c.Kind == JoinMember && !c.Alive:
		return invalid("a member joins alive")
	case c.Kind == SetMemberAlive && c.Addr != "":
		return invalid("member-alive takes no address")
	case c.Kind != JoinMember && c.Kind != SetMemberAlive && (c.Addr != "" || c.Alive):
		return invalid("%s takes a member id only", c.Kind)
	}
	return nil
}

func (m *machine) checkMember(c Command) error {
	if isMoveKind(c.Kind) {
		return m.checkMove(c)
	}
	if c.Kind == Rebalance {
		return nil
	}
	mb, known := m.members[c.Member]
	switch {
	case m.forgotten[c.Member] && !(mutNoTombstone && c.Kind == JoinMember):
		return fmt.Errorf("%w: member %d", ErrForgotten, c.Member)
	case c.Kind != JoinMember && !known:
		return ErrNoMember
	case c.Kind == ForgetMember:
		return m.checkForget(mb)
	case c.Kind != JoinMember && c.Kind != SetMemberAlive:
		return m.checkDecommission(c, mb)
	case c.Kind == JoinMember && !known && len(m.members) >= MembersMax:
		return invalid("the cluster has %d members already", MembersMax)
	}
	return nil
}

func (m *machine) applyMember(c Command) {
	mb, known := m.members[c.Member]
	m.rebalanceAsked = m.rebalanceAsked || !known // a new member: even the partitions out
	mb.ID, mb.Alive = c.Member, c.Alive           // a draining member stays draining
	if c.Kind == JoinMember {
		mb.Addr = c.Addr
	}
	m.members[c.Member] = mb
	if mutNoTombstone {
		delete(m.forgotten, c.Member)
	}
}

// liveMembers lists the ids of the members alive now, ascending.
func (m *machine) liveMembers() []uint64 {
	var ids []uint64
	for _, id := range slices.Sorted(maps.Keys(m.members)) {
		if m.members[id].Alive {
			ids = append(ids, id)
		}
	}
	return ids
}

func (m *machine) setOwners(topicID uint64, owners []uint64) {
	if len(owners) > 0 {
		m.owners[topicID] = owners
	}
}

// Owners returns the owner of each partition of the topic incarnation id, assigned
// round-robin over the live members when the partition was created; nil when no member
// had joined then (a single node: every partition is local) or the topic is unknown. The
// slice belongs to the store: do not change it.
func (s *Store) Owners(topicID uint64) []uint64 { return s.sm.owners[topicID] }

// assign extends owners to n partitions, round-robin over the live members starting at
// an offset drawn from the entry's index (so topics do not all start on the same member).
// With no live member it returns owners unchanged: partitions stay unassigned (local).
func (m *machine) assign(owners []uint64, n int, index uint64) []uint64 {
	live := m.placeable()
	if len(live) == 0 {
		return owners
	}
	owners = slices.Clone(owners) // the old topic value keeps its own
	start := int(index % uint64(len(live)))
	for p := len(owners); p < n; p++ {
		owners = append(owners, live[(start+p)%len(live)])
	}
	return owners
}

// Members lists the members, by id.
func (s *Store) Members() []Member {
	out := make([]Member, 0, len(s.sm.members))
	for _, id := range slices.Sorted(maps.Keys(s.sm.members)) {
		out = append(out, s.sm.members[id])
	}
	return out
}

// IsMember reports whether id joined the members.
func (s *Store) IsMember(id uint64) bool {
	_, ok := s.sm.members[id]
	return ok
}

// MemberDead reports whether id is a member that the controller marked dead (an id that
// never joined is not dead: nothing says so).
func (s *Store) MemberDead(id uint64) bool {
	m, ok := s.sm.members[id]
	return ok && !m.Alive
}

// StateDigest hashes the replica's state (topics with their owners, members, users, and
// the rest when there is some): replicas at the same applied index must agree on it. The
// simulators compare them.
func (s *Store) StateDigest() uint64 {
	h := fnv.New64a()
	for _, t := range s.Topics() {
		owner := t.Owner
		t.Owner = "" // printed apart, and only when set: a state without owners digests as it did
		fmt.Fprintf(h, "%+v %v;", t, s.Owners(t.ID))
		if owner != "" {
			fmt.Fprintf(h, "owner %s;", owner)
		}
	}
	type digestMember struct { // Member without Draining: digests of other states unchanged
		ID    uint64
		Addr  string
		Alive bool
	}
	var draining []uint64
	members := make([]digestMember, 0, len(s.sm.members))
	for _, m := range s.Members() {
		members = append(members, digestMember{ID: m.ID, Addr: m.Addr, Alive: m.Alive})
		if m.Draining {
			draining = append(draining, m.ID)
		}
	}
	fmt.Fprintf(h, "%+v", members)
	if len(draining) > 0 || len(s.sm.removed) > 0 {
		fmt.Fprintf(h, ";draining %v removed %v", draining, slices.Sorted(maps.Keys(s.sm.removed)))
	}
	for _, u := range s.Users() { // none: the digest of a state without users is as it was
		fmt.Fprintf(h, ";%s %s %v %v", u.Name, u.Hash, u.Grants, u.Root)
	}
	// Printed only when some: digests of other states unchanged.
	if len(s.sm.forgotten) > 0 || len(s.sm.epochs) > 0 {
		fmt.Fprintf(h, ";forgotten %v", slices.Sorted(maps.Keys(s.sm.forgotten)))
		for _, id := range slices.Sorted(maps.Keys(s.sm.epochs)) {
			fmt.Fprintf(h, ";epochs %d %v", id, s.sm.epochs[id])
		}
	}
	if len(s.sm.moves) > 0 {
		fmt.Fprintf(h, ";moves %+v", s.sm.sortedMoves())
	}
	for _, id := range slices.Sorted(maps.Keys(s.sm.cutEpochs)) {
		fmt.Fprintf(h, ";cut %d %v", id, s.sm.cutEpochs[id])
	}
	if len(s.sm.forwards) > 0 { // every replica refuses the same copies (forwards.go)
		fmt.Fprintf(h, ";forwards %+v", s.sm.sortedForwarders())
	}
	return h.Sum64()
}
