package invariants

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Lateness is invariant 11's watch over a heal phase: every message answered 202 must be
// consumable (committed to a durable partition log, or delivered) within BoundNs of the
// heal's start. Past the bound it takes the messages not consumable yet, then notes when
// each becomes so; a message that never does is left open. The simulator calls Watch
// before every heal event; Watch looks at the state only every LateLookNs once messages
// are late, since a look reads every durable image.
type Lateness struct {
	BoundNs int64
	open    map[uint64]bool  // not consumable at the bound, nor since
	at      map[uint64]int64 // late: consumable this long after the heal began
	nextNs  int64            // the next look
}

// LateLookNs spaces Lateness's looks at the state once messages are late.
const LateLookNs = 100_000_000

// Look reports the messages answered 202 and not yet delivered, and whether a message is
// consumable now. It is called only when Watch looks.
type Look func() (undelivered []uint64, consumable func(id uint64) bool)

// Watch is called at simulated time now of a heal that began at start.
func (l *Lateness) Watch(now, start int64, look Look) {
	if now-start <= l.BoundNs || (l.open != nil && (len(l.open) == 0 || now < l.nextNs)) {
		return
	}
	l.nextNs = now + LateLookNs
	undelivered, consumable := look()
	if l.open == nil {
		l.open, l.at = map[uint64]bool{}, map[uint64]int64{}
		for _, id := range undelivered {
			if !consumable(id) {
				l.open[id] = true
			}
		}
		return
	}
	for _, id := range slices.Sorted(maps.Keys(l.open)) {
		if consumable(id) {
			delete(l.open, id)
			l.at[id] = now - start
		}
	}
}

// Final looks once more at the end of the heal, whatever the time since the last look,
// and reports the violation if any message was late or is still not consumable.
func (l *Lateness) Final(now, start int64, look Look) error {
	l.nextNs = 0
	l.Watch(now, start, look)
	if len(l.at)+len(l.open) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(l.at))
	slices.SortStableFunc(ids, func(a, b uint64) int { return cmp.Compare(l.at[b], l.at[a]) }) // latest first
	var b strings.Builder
	for i, id := range ids[:min(len(ids), 5)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "message %d at %.3f s (late by %.3f s)", id, float64(l.at[id])/1e9, float64(l.at[id]-l.BoundNs)/1e9)
	}
	if len(l.open) > 0 {
		fmt.Fprintf(&b, "; %d never consumable, first %d", len(l.open), slices.Min(slices.Collect(maps.Keys(l.open))))
	}
	return fmt.Errorf("invariant 11: %d messages answered 202 became consumable (committed to a partition, or delivered) later than %d s after the heal began: %s",
		len(ids)+len(l.open), l.BoundNs/1_000_000_000, b.String())
}
