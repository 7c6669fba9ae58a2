// Package benchstat holds what the load generators (cmd/narad-bench and `narad bench`)
// share: a fixed-size latency histogram and the formatting of its figures.
package benchstat

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Histogram is a fixed-size log-linear histogram of durations in nanoseconds: exact below
// 256 ns, then 128 linear sub-buckets per power of two, so a reported percentile is within
// 1/128 (< 0.8 %) of the true value. Values above histMax (about 18 minutes) land in the
// last bucket. Record does no allocation and takes no lock: each worker owns one and the
// runner merges them once the workers have stopped.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64
	min    uint64
	max    uint64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // linear sub-buckets per power of two
	histMaxBits = 40
	histMax     = 1<<histMaxBits - 1
	// the bucket index of histMax is (histMaxBits-histSubBits-1)*histSub + (histMax >> e),
	// whose top is 2*histSub-1.
	histBuckets = (histMaxBits-histSubBits-1)*histSub + 2*histSub
)

func histIndex(v uint64) int {
	if v > histMax {
		v = histMax
	}
	e := bits.Len64(v) - histSubBits - 1
	if e < 0 {
		e = 0
	}
	return e*histSub + int(v>>uint(e))
}

// histBounds gives the smallest and largest value that fall in bucket i.
func histBounds(i int) (lo, hi uint64) {
	e := i>>histSubBits - 1
	if e < 0 {
		e = 0
	}
	m := uint64(i - e*histSub)
	lo = m << uint(e)
	return lo, lo + 1<<uint(e) - 1
}

// Record adds one duration (negative durations count as zero).
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of samples recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest sample, exact.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest sample, exact.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean is the exact mean.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Quantile gives the value at quantile q in [0,1]: the top of the bucket holding the sample
// of rank ceil(q·n), clamped to the exact min and max. Zero when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return time.Duration(h.min)
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			_, hi := histBounds(i)
			hi = min(max(hi, h.min), h.max)
			return time.Duration(hi)
		}
	}
	return time.Duration(h.max)
}

// Ms is d in milliseconds, rounded to the microsecond.
func Ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// FmtMs prints a figure in milliseconds for a human: "-" for 0, µs below 1 ms, s above
// 1,000 ms.
func FmtMs(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 1000:
		return fmt.Sprintf("%.2fms", v)
	default:
		return fmt.Sprintf("%.2fs", v/1000)
	}
}
