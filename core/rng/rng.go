package rng

import (
	"math/bits"

	"github.com/narad/narad/core/assert"
)

// Rand is a SplitMix64 generator. It is not safe for concurrent use; the core is
// single-threaded, and each simulated component gets its own stream via Fork.
type Rand struct {
	state uint64
}

// New returns a generator seeded with seed.
func New(seed uint64) *Rand { return &Rand{state: seed} }

// Uint64 returns the next 64 random bits.
func (r *Rand) Uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Intn returns a uniform value in [0, n). It panics if n <= 0.
func (r *Rand) Intn(n int) int {
	assert.That(n > 0, "rng: Intn with n <= 0")
	// Lemire's multiply-shift with rejection keeps the result unbiased.
	bound := uint64(n)
	for {
		v := r.Uint64()
		hi, lo := bits.Mul64(v, bound)
		if lo >= (-bound)%bound {
			return int(hi)
		}
	}
}

// Range returns a uniform value in [lo, hi]. It panics if hi < lo.
func (r *Rand) Range(lo, hi int) int {
	assert.That(hi >= lo, "rng: Range with hi < lo")
	return lo + r.Intn(hi-lo+1)
}

// Float64 returns a uniform value in [0, 1).
func (r *Rand) Float64() float64 {
	return float64(r.Uint64()>>11) / (1 << 53)
}

// Chance reports true with probability p.
func (r *Rand) Chance(p float64) bool {
	return p > 0 && r.Float64() < p
}

// Fork returns an independent generator derived from this one, so that adding draws in
// one component does not shift the stream of another.
func (r *Rand) Fork() *Rand { return New(r.Uint64() ^ 0x5851f42d4c957f2d) }

// Read fills p with random bytes; it never fails. It lets a seeded stream stand in for
// crypto/rand.Reader in the simulator.
func (r *Rand) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return len(p), nil
}
