// Package simnet is the simulator's network between nodes (DESIGN.md section 4): it
// decides, from a seeded source, when each message sent arrives, and whether it arrives
// at all. It holds no queue and no clock: Send returns the deliveries for the caller to
// schedule on its own event queue, and Arrives decides at delivery time, so a partition
// that starts while a message is in flight drops it. Faults, each switchable:
//
//   - delay: uniform in [DelayMinNs, DelayMaxNs], independently per message, which also
//     reorders messages;
//   - drop (DropProb) and duplicate (DupProb, the copy with its own delay);
//   - stale duplicate (StaleProb): a copy delivered StaleMinNs to StaleMaxNs later, long
//     after the conversation it belonged to moved on;
//   - partitions: a link cut one way (Cut) or both ways (Partition), until Heal;
//   - a send that fails at the sender (SendFailProb: a stream reset): Transmit reports
//     it, nothing is delivered, and the caller tells the sending node, as io/nodeshell
//     tells the core (node.SendFailed);
//   - connections: each pair of nodes talks over one connection. Reset ends it (a node
//     restarted, or the caller restarts the links): what is in flight on it is lost, and
//     a new one is up after a delay drawn in [0, ConnectMaxNs]; until then a send between
//     the two fails at the sender (no connection yet), as io/peernet's Send does.
//
// With faults off (SetFaults(false)) every message arrives once, after DelayMinNs, unless
// a cut is in place (cuts are explicit, not drawn, and Heal removes them) or the
// connection is not up yet (connections are not a fault: a Reset always takes its time).
package simnet

import "github.com/narad/narad/core/rng"

// Config holds the fault rates of one run.
type Config struct {
	DelayMinNs, DelayMaxNs int64
	DropProb, DupProb      float64
	StaleProb              float64
	StaleMinNs, StaleMaxNs int64
	// SendFailProb: a send fails at the sender (a stream reset), with faults on.
	SendFailProb float64
	// ConnectMaxNs bounds the time a connection takes to come up after a Reset (io/peernet's
	// dialer redials at once when it sees the old one end, and at most every RedialMax, 1
	// s, while it cannot reach the peer).
	ConnectMaxNs int64
}

// Delivery is one arrival for the caller to schedule.
type Delivery[M any] struct {
	AtNs     int64
	From, To uint64
	Msg      M
	Stale    bool   // a late duplicate
	conn     uint64 // the connection it travels on: lost if that one ends first
}

// Stats counts what the network did.
type Stats struct {
	Sent, Delivered, Dropped, Duplicated, Stale, CutDropped uint64
	// SendFailed: sends failed at the sender by a drawn stream reset; NotConnected: sends
	// failed at the sender for want of a connection; Resets: connections ended (their
	// messages in flight, ResetDropped, lost).
	SendFailed, NotConnected, Resets, ResetDropped uint64
}

type link struct{ from, to uint64 }

// pair names the connection between two nodes (lo < hi).
type pair struct{ lo, hi uint64 }

func pairOf(a, b uint64) pair { return pair{min(a, b), max(a, b)} }

// conn is a pair's connection: its number (0 the first, before any Reset) and when it is
// up.
type conn struct {
	id     uint64
	upAtNs int64
}

// Net is a simulated network carrying messages of type M.
type Net[M any] struct {
	r      *rng.Rand
	cfg    Config
	faults bool
	cut    map[link]bool
	conns  map[pair]conn
	connID uint64
	stats  Stats
}

// New returns a network with faults on.
func New[M any](r *rng.Rand, cfg Config) *Net[M] {
	cfg.DelayMaxNs = max(cfg.DelayMaxNs, cfg.DelayMinNs)
	cfg.StaleMaxNs = max(cfg.StaleMaxNs, cfg.StaleMinNs)
	return &Net[M]{r: r, cfg: cfg, faults: true, cut: map[link]bool{}, conns: map[pair]conn{}}
}

// SetFaults turns the drawn faults (loss, duplicates, jitter, stale copies) on or off.
func (n *Net[M]) SetFaults(on bool) { n.faults = on }

// Cut stops messages from one node to another (a one-way partition).
func (n *Net[M]) Cut(from, to uint64) { n.cut[link{from, to}] = true }

// Partition cuts both directions between a and b.
func (n *Net[M]) Partition(a, b uint64) {
	n.Cut(a, b)
	n.Cut(b, a)
}

// Heal removes every cut.
func (n *Net[M]) Heal() { clear(n.cut) }

// Cuts reports whether messages from one node to another are cut.
func (n *Net[M]) Cuts(from, to uint64) bool { return n.cut[link{from, to}] }

// Stats returns the counters.
func (n *Net[M]) Stats() Stats { return n.stats }

// Send draws the fate of one message: zero, one or more deliveries. A send that fails at
// the sender is a loss like a drop (see Transmit for a caller that tells the sender).
func (n *Net[M]) Send(nowNs int64, from, to uint64, msg M) []Delivery[M] {
	out, _ := n.Transmit(nowNs, from, to, msg)
	return out
}

// Transmit is Send for a sender that learns when its send fails: failed reports a send
// that failed at the sender (no connection up yet, or a drawn stream reset), which
// delivers nothing. A message that leaves may still be lost in flight (a drop, a cut, its
// connection's Reset): the sender is not told of those.
func (n *Net[M]) Transmit(nowNs int64, from, to uint64, msg M) (out []Delivery[M], failed bool) {
	n.stats.Sent++
	c := n.conns[pairOf(from, to)]
	if nowNs < c.upAtNs {
		n.stats.NotConnected++
		return nil, true
	}
	if !n.faults {
		return []Delivery[M]{{AtNs: nowNs + n.cfg.DelayMinNs, From: from, To: to, Msg: msg, conn: c.id}}, false
	}
	if n.cfg.SendFailProb > 0 && n.r.Chance(n.cfg.SendFailProb) {
		n.stats.SendFailed++
		return nil, true
	}
	if n.r.Chance(n.cfg.DropProb) {
		n.stats.Dropped++
		return nil, false
	}
	out = []Delivery[M]{{AtNs: nowNs + n.delay(), From: from, To: to, Msg: msg, conn: c.id}}
	if n.r.Chance(n.cfg.DupProb) {
		n.stats.Duplicated++
		out = append(out, Delivery[M]{AtNs: nowNs + n.delay(), From: from, To: to, Msg: msg, conn: c.id})
	}
	if n.r.Chance(n.cfg.StaleProb) {
		n.stats.Stale++
		at := nowNs + n.cfg.StaleMinNs + n.span(n.cfg.StaleMaxNs-n.cfg.StaleMinNs)
		out = append(out, Delivery[M]{AtNs: at, From: from, To: to, Msg: msg, Stale: true, conn: c.id})
	}
	return out, false
}

// Reset ends the connection between a and b: what is in flight on it is lost (Arrives
// says so), and the next one is up at the time Reset returns, drawn in [nowNs, nowNs +
// ConnectMaxNs]. A stale duplicate rides its own connection's fate too.
func (n *Net[M]) Reset(nowNs int64, a, b uint64) (upAtNs int64) {
	n.stats.Resets++
	n.connID++
	upAtNs = nowNs + n.span(n.cfg.ConnectMaxNs)
	n.conns[pairOf(a, b)] = conn{id: n.connID, upAtNs: upAtNs}
	return upAtNs
}

// Arrives decides, at delivery time, whether d reaches its node: not across a cut, and
// not once its connection ended.
func (n *Net[M]) Arrives(d Delivery[M]) bool {
	if n.cut[link{d.From, d.To}] {
		n.stats.CutDropped++
		return false
	}
	if n.conns[pairOf(d.From, d.To)].id != d.conn {
		n.stats.ResetDropped++
		return false
	}
	n.stats.Delivered++
	return true
}

func (n *Net[M]) delay() int64 {
	return n.cfg.DelayMinNs + n.span(n.cfg.DelayMaxNs-n.cfg.DelayMinNs)
}

// span draws uniformly in [0, w].
func (n *Net[M]) span(w int64) int64 {
	if w <= 0 {
		return 0
	}
	return int64(n.r.Uint64() % uint64(w+1))
}
