package lease

import "github.com/narad/narad/core/assert"

// Lease takes up to n leases on the lowest available offsets, lowest first, each for the
// visibility timeout. An offset is available when it is below the high-watermark, at or
// above the oldest offset, not acked and not leased. Released offsets (nacked or expired)
// all lie below the cursor, so they go first; then the cursor moves on over offsets never
// leased since recovery. It answers nothing before recovery, at MaxInFlight, or when the
// next fresh offset is AckWindowMax past the floor (doc.go, Bounds).
//
// Cost: O(log InFlight) per receipt, plus the acked offsets the cursor skips (each once).
func (m *Manager) Lease(nowNs int64, n int) []Receipt {
	m.observe(nowNs)
	if !m.ready || n <= 0 {
		return nil
	}
	m.expire(nowNs)
	var out []Receipt
	for len(out) < n && len(m.leases) < m.cfg.MaxInFlight {
		var r released
		if len(m.released) > 0 {
			r = m.released.pop()
		} else if off, ok := m.fresh(); ok {
			r = released{offset: off}
			m.cursor = off + 1
		} else {
			break
		}
		l := &lease{
			offset:     r.offset,
			nonce:      m.rand.Uint64(),
			deadlineNs: nowNs + m.cfg.VisibilityTimeoutNs,
			deliveries: r.deliveries + 1,
		}
		assert.That(
			l.offset < m.hw && l.offset >= m.acked.floor && !m.acked.has(l.offset),
			"lease: leasing an offset that is not available",
		)
		assert.That(m.leases[l.offset] == nil, "lease: offset leased twice")
		m.leases[l.offset] = l
		m.byExpiry.push(l)
		m.stats.Leases++
		if l.deliveries > 1 {
			m.stats.Redeliveries++
		}
		out = append(
			out,
			Receipt{Offset: l.offset, Nonce: l.nonce, DeadlineNs: l.deadlineNs, Deliveries: l.deliveries},
		)
	}
	return out
}

// fresh returns the next offset never leased since recovery, if one may be leased now:
// the cursor, moved past acked offsets, below the high-watermark and inside the window.
func (m *Manager) fresh() (uint64, bool) {
	m.cursor = max(m.cursor, m.acked.floor)
	for m.cursor < m.hw && m.acked.has(m.cursor) {
		m.cursor++ // only offsets acked in an earlier run lie above the cursor: each is skipped once
	}
	ok := m.cursor < m.hw && m.cursor-m.acked.floor < uint64(m.cfg.AckWindowMax)
	return m.cursor, ok
}

// Available reports whether Lease would hand out something now (used to wake long polls).
func (m *Manager) Available(nowNs int64) bool {
	m.observe(nowNs)
	if !m.ready {
		return false
	}
	m.expire(nowNs)
	if len(m.leases) >= m.cfg.MaxInFlight {
		return false
	}
	if len(m.released) > 0 {
		return true
	}
	_, ok := m.fresh()
	return ok
}

// Ack settles the lease of offset held with nonce: the record is not delivered again by
// this process, and after the next flush not by any (doc.go, Persistence). An ack after
// persistence failed still answers nil: the ack holds in memory.
func (m *Manager) Ack(nowNs int64, offset, nonce uint64) error {
	m.observe(nowNs)
	l, err := m.held(nowNs, offset, nonce)
	if err != nil {
		return err
	}
	m.dropLease(l)
	assert.That(m.acked.add(offset), "lease: acking an offset acked already")
	m.cursor = max(m.cursor, m.acked.floor)
	m.stats.Acks++
	if m.failure != nil {
		return nil
	}
	m.pending = append(m.pending, offset)
	if len(m.pending) > 2*m.acked.count+pendingSlack {
		m.trimPending()
	}
	if m.flushAtNs == 0 {
		m.flushAtNs = nowNs + m.cfg.AckFlushIntervalNs
	}
	m.maybeFlush(nowNs) // a full frame goes out at once
	return nil
}

// Nack releases the lease now: the record may be leased again at once.
func (m *Manager) Nack(nowNs int64, offset, nonce uint64) error {
	m.observe(nowNs)
	l, err := m.held(nowNs, offset, nonce)
	if err != nil {
		return err
	}
	m.dropLease(l)
	m.release(l)
	m.stats.Nacks++
	return nil
}

// Extend renews the lease for a full visibility timeout from now and returns its deadline.
func (m *Manager) Extend(nowNs int64, offset, nonce uint64) (int64, error) {
	m.observe(nowNs)
	l, err := m.held(nowNs, offset, nonce)
	if err != nil {
		return 0, err
	}
	l.deadlineNs = nowNs + m.cfg.VisibilityTimeoutNs
	m.byExpiry.fix(l.idx)
	m.stats.Extends++
	return l.deadlineNs, nil
}

// held returns the live lease of offset if nonce matches it, after expiring what is due.
func (m *Manager) held(nowNs int64, offset, nonce uint64) (*lease, error) {
	if !m.ready {
		return nil, ErrNotReady
	}
	m.expire(nowNs)
	l := m.leases[offset]
	if l == nil || l.nonce != nonce && !mutLeaseStale {
		m.stats.Gone++
		return nil, ErrGone
	}
	return l, nil
}

// expire releases every lease whose deadline is at or before now, earliest first.
func (m *Manager) expire(nowNs int64) {
	for len(m.byExpiry) > 0 && m.byExpiry[0].deadlineNs <= nowNs {
		l := m.byExpiry[0]
		m.dropLease(l)
		m.release(l)
		m.stats.Expiries++
	}
}

// release makes the offset of a lease that was nacked or expired (and dropped) available
// again, lowest first.
func (m *Manager) release(l *lease) {
	if mutNackSettle {
		m.acked.add(l.offset)
		m.cursor = max(m.cursor, m.acked.floor)
		return
	}
	m.released.push(released{offset: l.offset, deliveries: l.deliveries})
}

func (m *Manager) dropLease(l *lease) {
	m.byExpiry.remove(l.idx)
	delete(m.leases, l.offset)
}
