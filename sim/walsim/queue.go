package walsim

import "container/heap"

type eventKind uint8

const (
	evOpDone eventKind = iota + 1
	evAppend
	evTick
	evCheckpoint
	evCrash
	evRestart
)

// event is one scheduled input. Epoch ties node events to one incarnation of the node:
// events of an earlier incarnation are dropped (a crash loses what was in flight).
type event struct {
	at     int64
	n      uint64 // insertion order breaks ties deterministically
	kind   eventKind
	epoch  uint64
	client int
	op     opRef
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].n < q[j].n
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// scheduler is the simulated clock and its event queue.
type scheduler struct {
	now int64
	n   uint64
	q   queue
}

const queueEventsMax = 1 << 20

func (s *scheduler) at(t int64, e event) {
	if len(s.q) >= queueEventsMax {
		panic("walsim: event queue over its bound")
	}
	s.n++
	e.at, e.n = max(t, s.now), s.n
	heap.Push(&s.q, e)
}

func (s *scheduler) next() (event, bool) {
	if len(s.q) == 0 {
		return event{}, false
	}
	e := heap.Pop(&s.q).(event)
	s.now = e.at
	return e, true
}
