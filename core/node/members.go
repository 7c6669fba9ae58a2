package node

import "github.com/narad/narad/core/meta"

// MemberInfo is one member as GET /v1/cluster/members shows it.
type MemberInfo struct {
	ID              uint64
	Addr            string
	Alive           bool
	Leader          bool // the metastore's raft leader, as this replica knows
	OwnedPartitions int
}

// ListMembers answers the members the local metastore replica holds, by id.
func (n *Node) ListMembers(nowNs int64, token uint64) {
	if err := n.IsReady(); err != nil {
		n.respond(Response{Token: token, Err: err})
		return
	}
	leader, owned := n.meta.LeaderID(), n.ownedPartitions()
	var out []MemberInfo
	for _, m := range n.meta.Members() {
		out = append(out, MemberInfo{ID: m.ID, Addr: m.Addr, Alive: m.Alive, Leader: m.ID == leader, OwnedPartitions: owned[m.ID]})
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

// maybeJoin makes this node a member, through the log, once its replica leads (a single
// node is its own leader; a cluster forwards the join in the cluster issue's next step):
// again after a restart if its address changed, and again later if the proposal failed.
// Config.Addr empty: the node does not join.
func (n *Node) maybeJoin(nowNs int64) {
	if n.cfg.Addr == "" || n.joinToken != 0 || !n.metaReady || !n.meta.Leader() {
		return
	}
	id := n.meta.ID()
	for _, m := range n.meta.Members() {
		if m.ID == id && m.Addr == n.cfg.Addr {
			return
		}
	}
	n.nextTk++
	n.joinToken = n.nextTk
	n.meta.Propose(nowNs, n.joinToken, meta.Command{Kind: meta.JoinMember, Member: id, Addr: n.cfg.Addr, Alive: true})
}

// onJoinDone takes the join's answer; a failed join is proposed again on a later tick.
func (n *Node) onJoinDone(metaToken uint64) bool {
	if metaToken == 0 || metaToken != n.joinToken {
		return false
	}
	n.joinToken = 0
	return true
}
