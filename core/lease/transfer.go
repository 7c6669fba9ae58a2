package lease

import (
	"fmt"

	"github.com/narad/narad/core/assert"
)

// A partition that moves to another node (core/node move.go) takes its acks along: the
// source hands AckState to the destination, which ImportAcks into a fresh manager and
// waits for Flushed before it takes the partition over. Leases do not move: a record
// leased at the source is delivered again by the destination (its lease ends with the
// move, as with a crash of the owner), but a record acked at the source is not.

// AckState is the acked offsets as a floor (every offset below it is acked) and the
// acked offsets above it, in increasing order: at most AckSpanMax past the floor.
func (m *Manager) AckState() (floor uint64, acked []uint64) {
	m.acked.each(func(o uint64) { acked = append(acked, o) })
	return m.acked.floor, acked
}

// ImportAcks takes another copy's ack state (AckState) into a manager that has
// recovered and holds no lease: every offset below floor and every offset of acked is
// acked here, and written at once (one flush: Flushed reports when it is durable). It
// answers an error and changes nothing for a state the manager cannot hold (an offset
// below the floor, out of order, or AckSpanMax or more past it).
func (m *Manager) ImportAcks(nowNs int64, floor uint64, acked []uint64) error {
	assert.That(m.ready && len(m.leases) == 0, "lease: ImportAcks before recovery or with leases")
	prev := floor
	for i, o := range acked {
		if o < floor || o-floor >= AckSpanMax || i > 0 && o <= prev {
			return fmt.Errorf("lease: an imported ack at %d does not fit floor %d", o, floor)
		}
		prev = o
	}
	m.observe(nowNs)
	m.acked.raiseFloor(floor)
	for _, o := range acked {
		if m.acked.add(o) {
			m.pending = append(m.pending, o)
		}
	}
	m.cursor = max(m.cursor, m.acked.floor)
	m.stats.Acks++ // one more to make durable: the floor, and the offsets with it
	if m.failure != nil {
		return nil
	}
	// Written now: the frame carries the floor, which covers what it does not list. A
	// flush time of 0 would mean nothing pending, so a reading of 0 counts as 1.
	m.flushAtNs = max(1, nowNs)
	m.maybeFlush(m.flushAtNs)
	return nil
}
