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
//   - partitions: a link cut one way (Cut) or both ways (Partition), until Heal.
//
// With faults off (SetFaults(false)) every message arrives once, after DelayMinNs, unless
// a cut is in place (cuts are explicit, not drawn, and Heal removes them).
package simnet

import "github.com/narad/narad/core/rng"

// Config holds the fault rates of one run.
type Config struct {
	DelayMinNs, DelayMaxNs int64
	DropProb, DupProb      float64
	StaleProb              float64
	StaleMinNs, StaleMaxNs int64
}

// Delivery is one arrival for the caller to schedule.
type Delivery[M any] struct {
	AtNs     int64
	From, To uint64
	Msg      M
	Stale    bool // a late duplicate
}

// Stats counts what the network did.
type Stats struct {
	Sent, Delivered, Dropped, Duplicated, Stale, CutDropped uint64
}

type link struct{ from, to uint64 }

// Net is a simulated network carrying messages of type M.
type Net[M any] struct {
	r      *rng.Rand
	cfg    Config
	faults bool
	cut    map[link]bool
	stats  Stats
}

// New returns a network with faults on.
func New[M any](r *rng.Rand, cfg Config) *Net[M] {
	cfg.DelayMaxNs = max(cfg.DelayMaxNs, cfg.DelayMinNs)
	cfg.StaleMaxNs = max(cfg.StaleMaxNs, cfg.StaleMinNs)
	return &Net[M]{r: r, cfg: cfg, faults: true, cut: map[link]bool{}}
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

// Send draws the fate of one message: zero, one or more deliveries.
func (n *Net[M]) Send(nowNs int64, from, to uint64, msg M) []Delivery[M] {
	n.stats.Sent++
	if !n.faults {
		return []Delivery[M]{{AtNs: nowNs + n.cfg.DelayMinNs, From: from, To: to, Msg: msg}}
	}
	if n.r.Chance(n.cfg.DropProb) {
		n.stats.Dropped++
		return nil
	}
	out := []Delivery[M]{{AtNs: nowNs + n.delay(), From: from, To: to, Msg: msg}}
	if n.r.Chance(n.cfg.DupProb) {
		n.stats.Duplicated++
		out = append(out, Delivery[M]{AtNs: nowNs + n.delay(), From: from, To: to, Msg: msg})
	}
	if n.r.Chance(n.cfg.StaleProb) {
		n.stats.Stale++
		at := nowNs + n.cfg.StaleMinNs + n.span(n.cfg.StaleMaxNs-n.cfg.StaleMinNs)
		out = append(out, Delivery[M]{AtNs: at, From: from, To: to, Msg: msg, Stale: true})
	}
	return out
}

// Arrives decides, at delivery time, whether d reaches its node: not across a cut.
func (n *Net[M]) Arrives(d Delivery[M]) bool {
	if n.cut[link{d.From, d.To}] {
		n.stats.CutDropped++
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
