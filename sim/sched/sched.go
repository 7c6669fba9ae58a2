// Package sched is the simulator's clock: a queue of events ordered by simulated time,
// ties broken by insertion order, so that a run is a pure function of its seed. A
// simulation pops the next event (which advances the clock to its time), handles it, and
// schedules more; nothing ever waits on a real clock.
package sched

import "container/heap"

// EventsMax bounds the queue: a simulation that schedules more is broken.
const EventsMax = 1 << 20

// Scheduler holds pending events of type E.
type Scheduler[E any] struct {
	now int64
	n   uint64
	q   queue[E]
}

type item[E any] struct {
	at int64
	n  uint64
	e  E
}

type queue[E any] []item[E]

func (q queue[E]) Len() int { return len(q) }
func (q queue[E]) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].n < q[j].n
}
func (q queue[E]) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue[E]) Push(x any)   { *q = append(*q, x.(item[E])) }
func (q *queue[E]) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// Now is the simulated time, in nanoseconds.
func (s *Scheduler[E]) Now() int64 { return s.now }

// At schedules e at time t (or now, if t is in the past).
func (s *Scheduler[E]) At(t int64, e E) {
	if len(s.q) >= EventsMax {
		panic("sched: event queue over its bound")
	}
	s.n++
	heap.Push(&s.q, item[E]{at: max(t, s.now), n: s.n, e: e})
}

// Next pops the earliest event and moves the clock to its time.
func (s *Scheduler[E]) Next() (E, bool) {
	if len(s.q) == 0 {
		var zero E
		return zero, false
	}
	it := heap.Pop(&s.q).(item[E])
	s.now = it.at
	return it.e, true
}

// Len is the number of pending events.
func (s *Scheduler[E]) Len() int { return len(s.q) }
