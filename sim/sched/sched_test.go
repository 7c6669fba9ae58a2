package sched

import "testing"

func TestOrderByTimeThenInsertion(t *testing.T) {
	var s Scheduler[string]
	s.At(20, "c")
	s.At(10, "a")
	s.At(10, "b")
	var got string
	for e, ok := s.Next(); ok; e, ok = s.Next() {
		got += e
	}
	if got != "abc" || s.Now() != 20 {
		t.Fatalf("got %q at %d", got, s.Now())
	}
	s.At(5, "late") // in the past: runs now
	if e, _ := s.Next(); e != "late" || s.Now() != 20 {
		t.Fatalf("past event at %d", s.Now())
	}
}
