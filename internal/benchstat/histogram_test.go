package benchstat

import (
	"testing"
	"time"
)

func within(t *testing.T, name string, got, want time.Duration, rel float64) {
	t.Helper()
	diff := float64(got - want)
	if diff < 0 {
		diff = -diff
	}
	if diff > rel*float64(want) {
		t.Errorf("%s = %v, want %v ±%.1f%%", name, got, want, rel*100)
	}
}

func TestHistogramPercentilesOnKnownData(t *testing.T) {
	var h Histogram
	// 1 µs .. 10,000 µs, once each: the q-quantile is q·10 ms.
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	if h.Count() != 10000 {
		t.Fatalf("count %d", h.Count())
	}
	within(t, "p50", h.Quantile(0.50), 5000*time.Microsecond, 1.0/128)
	within(t, "p90", h.Quantile(0.90), 9000*time.Microsecond, 1.0/128)
	within(t, "p99", h.Quantile(0.99), 9900*time.Microsecond, 1.0/128)
	if h.Max() != 10*time.Millisecond || h.Quantile(1) != 10*time.Millisecond {
		t.Errorf("max %v, p100 %v: want exactly 10ms", h.Max(), h.Quantile(1))
	}
	if h.Min() != time.Microsecond || h.Quantile(0) != time.Microsecond {
		t.Errorf("min %v, p0 %v: want exactly 1µs", h.Min(), h.Quantile(0))
	}
	within(t, "mean", h.Mean(), 5000500*time.Nanosecond, 0.0001)
}

func TestHistogramSmallValuesAreExact(t *testing.T) {
	var h Histogram
	for v := 0; v < 256; v++ {
		h.Record(time.Duration(v))
	}
	for _, q := range []float64{0.1, 0.5, 0.9} {
		want := time.Duration(int(q*256+0.999999) - 1)
		if got := h.Quantile(q); got != want {
			t.Errorf("q%.1f = %v, want %v", q, got, want)
		}
	}
}

func TestHistogramSkewedAndMerged(t *testing.T) {
	// Two workers: 990 fast samples (100 µs) and 10 slow ones (50 ms).
	var a, b, m Histogram
	for i := 0; i < 495; i++ {
		a.Record(100 * time.Microsecond)
		b.Record(100 * time.Microsecond)
	}
	for i := 0; i < 5; i++ {
		a.Record(50 * time.Millisecond)
		b.Record(50 * time.Millisecond)
	}
	b.Record(-time.Second) // clamps to zero
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{})
	if m.Count() != 1001 {
		t.Fatalf("count %d", m.Count())
	}
	within(t, "p50", m.Quantile(0.5), 100*time.Microsecond, 1.0/128)
	within(t, "p99", m.Quantile(0.99), 100*time.Microsecond, 1.0/128)
	within(t, "p99.9", m.Quantile(0.999), 50*time.Millisecond, 1.0/128)
	if m.Max() != 50*time.Millisecond || m.Min() != 0 {
		t.Errorf("max %v min %v", m.Max(), m.Min())
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 {
		t.Error("empty histogram should report zero")
	}
}

func TestHistogramBucketsCoverEveryValue(t *testing.T) {
	prevHi := uint64(0)
	for i := 0; i < histBuckets; i++ {
		lo, hi := histBounds(i)
		if i > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if histIndex(lo) != i || histIndex(hi) != i {
			t.Fatalf("bucket %d [%d,%d] maps to %d,%d", i, lo, hi, histIndex(lo), histIndex(hi))
		}
		if w := hi - lo + 1; lo >= 2*histSub && w*histSub > lo {
			t.Fatalf("bucket %d too wide: [%d,%d]", i, lo, hi)
		}
		prevHi = hi
	}
	if prevHi != histMax || histIndex(1<<62) != histBuckets-1 {
		t.Fatalf("last bucket ends at %d, want %d", prevHi, uint64(histMax))
	}
}
