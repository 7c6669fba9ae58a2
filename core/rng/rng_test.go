package rng

import "testing"

func TestSameSeedSameStream(t *testing.T) {
	a, b := New(7), New(7)
	for i := 0; i < 1000; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatalf("streams diverged at draw %d", i)
		}
	}
	if New(7).Uint64() == New(8).Uint64() {
		t.Fatalf("seeds 7 and 8 start alike")
	}
}

func TestIntnRangeAndSpread(t *testing.T) {
	r := New(1)
	var counts [10]int
	for i := 0; i < 100000; i++ {
		v := r.Intn(10)
		if v < 0 || v >= 10 {
			t.Fatalf("Intn(10) = %d", v)
		}
		counts[v]++
	}
	for v, c := range counts {
		if c < 9000 || c > 11000 {
			t.Fatalf("value %d drawn %d times of 100000", v, c)
		}
	}
	if got := r.Range(5, 5); got != 5 {
		t.Fatalf("Range(5,5) = %d", got)
	}
}

func TestForkIsIndependent(t *testing.T) {
	a := New(3)
	f := a.Fork()
	if a.Uint64() == f.Uint64() {
		t.Fatalf("fork repeats its parent")
	}
	p := make([]byte, 13)
	if n, err := New(1).Read(p); n != 13 || err != nil {
		t.Fatalf("Read: %d %v", n, err)
	}
}
