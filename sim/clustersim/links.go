package clustersim

// The links between node processes: their ends, as io/peernet reports them.

// resetLink ends the connection between a and b (simnet.Reset): the processes at its
// ends are told now, as io/peernet tells the core when a connection ends (node.PeerReset),
// but a process that just started (a, unless tellBoth) had none. A send before the new
// connection is up fails at the sender, and nothing else will tell the node of it: the
// real transport's acceptor, before its peer redials, has no connection to report.
func (u *run) resetLink(a, b uint64, tellBoth bool) {
	u.net.Reset(u.s.Now(), a, b)
	for _, x := range [2][2]uint64{{a, b}, {b, a}} {
		if !tellBoth && x[0] == a {
			continue
		}
		if i := int(x[0] - 1); u.members[i].up {
			u.s.At(u.s.Now(), event{kind: evPeerReset, node: i, epoch: u.members[i].epoch, peer: x[1]})
		}
	}
}

// tellSender feeds a failed send or a connection's end to the node process it concerns.
func (u *run) tellSender(e event) {
	mb := u.members[e.node]
	if e.epoch != mb.epoch || !mb.up {
		return
	}
	if e.kind == evSendFailed {
		u.record('s', mb.id, e.msg.To, uint64(len(e.msg.Msg)))
		u.commitSendFailed(mb, e.msg.Msg)
		mb.n.SendFailed(u.nowOf(mb), e.msg.To, e.msg.Msg)
	} else {
		u.record('r', mb.id, e.peer)
		u.commitPeerReset(mb, e.peer)
		mb.n.PeerReset(u.nowOf(mb), e.peer)
	}
	u.drain(e.node)
}

// peerIdleNs is io/peernet's MaxIdleTimeout: a connection whose peer's process is gone
// ends that long after it last heard from it, and a dial of that peer fails.
const peerIdleNs = 10_000_000_000

// peersIdle ends the connections to node e.node while it stays down, every peerIdleNs,
// as the real transport's idle timeout does: without it a commit sent to a node that
// never comes back (removed, forgotten) waits for its own timeout, 30 s in some seeds,
// where the real one fails after 10 s (cluster seed 500773: invariant 11 after the heal).
func (u *run) peersIdle(e event) {
	mb := u.members[e.node]
	if mb.up || mb.epoch != e.epoch {
		return
	}
	for _, id := range u.ids {
		if id != mb.id {
			u.resetLink(mb.id, id, false)
		}
	}
	u.s.At(u.s.Now()+peerIdleNs, e)
}
