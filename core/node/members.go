package node

import "slices"

// MemberInfo is one member as GET /v1/cluster/members shows it.
type MemberInfo struct {
	ID              uint64
	Addr            string
	Alive           bool
	Leader          bool // the metastore's raft leader, as this replica knows
	Voter           bool // a voter of the applied raft configuration (else a learner)
	OwnedPartitions int
	Draining        bool // being decommissioned: it takes no new partitions
	MovesIn         int  // partition moves in progress to it (moveapi.go)
	MovesOut        int  // and from it
}

// Voters lists the voters of the local metastore replica's applied configuration (for
// the simulators' checks), ascending.
func (n *Node) Voters() []uint64 { return n.meta.Voters() }

// ListMembers answers the members the local metastore replica holds, by id.
func (n *Node) ListMembers(nowNs int64, token uint64) {
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	leader, owned, voters := n.meta.LeaderID(), n.ownedPartitions(), n.meta.Voters()
	in, outgoing := map[uint64]int{}, map[uint64]int{}
	for _, mv := range n.meta.Moves() {
		in[mv.To]++
		outgoing[mv.From]++
	}
	var out []MemberInfo
	for _, m := range n.meta.Members() {
		out = append(out, MemberInfo{ID: m.ID, Addr: m.Addr, Alive: m.Alive,
			Leader: m.ID == leader, Voter: slices.Contains(voters, m.ID),
			OwnedPartitions: owned[m.ID], Draining: m.Draining, MovesIn: in[m.ID],
			MovesOut: outgoing[m.ID]})
	}
	n.respond(Response{Token: token, Members: out})
}

// ownedPartitions counts the partitions each member owns. Partitions created before any
// member joined have no owner: they are this node's (a single node's own partitions).
func (n *Node) ownedPartitions() map[uint64]int {
	counts := map[uint64]int{}
	for _, t := range n.meta.Topics() {
		owners := n.meta.Owners(t.ID)
		if len(owners) == 0 {
			counts[n.meta.ID()] += int(t.Partitions)
			continue
		}
		for _, o := range owners {
			counts[o]++
		}
	}
	return counts
}

// MetastoreLeader reports the metastore leader this node's replica knows of and its
// term (0, 0 before recovery): the simulator checks there is one leader per term.
func (n *Node) MetastoreLeader() (leader, term uint64) {
	return n.meta.LeaderID(), n.meta.Term()
}

// PeerAddrs maps every other member the local replica knows to its address: the shell
// tells its transport where peers are (members join with the address they heartbeat).
func (n *Node) PeerAddrs() map[uint64]string {
	out := map[uint64]string{}
	for _, m := range n.meta.Members() {
		if m.ID != n.meta.ID() && m.Addr != "" {
			out[m.ID] = m.Addr
		}
	}
	return out
}

// MetastoreDigest hashes the state of the local metastore replica (meta.StateDigest):
// replicas at the same applied index must agree on it (invariant 6).
func (n *Node) MetastoreDigest() uint64 { return n.meta.StateDigest() }

// MemberDead reports whether this node's replica marks member id dead (the controller's
// liveness, which the dispatcher reroutes by).
func (n *Node) MemberDead(id uint64) bool { return n.meta.MemberDead(id) }
