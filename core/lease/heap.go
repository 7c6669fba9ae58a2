package lease

import "github.com/narad/narad/core/assert"

// lease is one record leased to a consumer.
type lease struct {
	offset     uint64
	nonce      uint64
	deadlineNs int64
	deliveries uint32 // leases of this offset since recovery, this one included
	idx        int    // position in the deadline heap
}

// deadlineHeap orders the leases by (deadline, offset): a total order, so expiry order
// does not depend on the heap's layout. Each lease knows its position, so Extend, Ack and
// Nack fix or remove it in O(log n) and the heap holds exactly the leases in flight
// (bounded by MaxInFlight).
type deadlineHeap []*lease

func (h deadlineHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	return a.deadlineNs < b.deadlineNs || a.deadlineNs == b.deadlineNs && a.offset < b.offset
}

func (h deadlineHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *deadlineHeap) push(l *lease) {
	l.idx = len(*h)
	*h = append(*h, l)
	h.up(l.idx)
}

// remove takes the lease at position i out of the heap.
func (h *deadlineHeap) remove(i int) {
	old := *h
	n := len(old) - 1
	assert.That(i >= 0 && i <= n, "lease: lease not in the deadline heap")
	if i != n {
		old.swap(i, n)
	}
	old[n].idx = -1
	old[n] = nil
	*h = old[:n]
	if i != n {
		h.fix(i)
	}
}

// fix restores the order after the lease at position i changed its deadline.
func (h deadlineHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h deadlineHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h deadlineHeap) down(i0 int) bool {
	i, n := i0, len(h)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// released is an offset given back (nacked or expired) and waiting to be leased again.
type released struct {
	offset     uint64
	deliveries uint32
}

// releasedHeap is a min-heap of released offsets. It never holds a stale entry: an offset
// leaves it only by being leased again or dropped by retention, and enters it only from a
// lease. Its size is bounded with the leases (see doc.go, Bounds).
type releasedHeap []released

func (h *releasedHeap) push(r released) {
	*h = append(*h, r)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2
		if s[i].offset <= s[j].offset {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

func (h *releasedHeap) pop() released {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && s[r].offset < s[j].offset {
			j = r
		}
		if s[i].offset <= s[j].offset {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	*h = s
	return top
}
