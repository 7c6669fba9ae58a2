package lease

import (
	"math/bits"

	"github.com/narad/narad/core/assert"
)

// ackSet is the acked state of a partition: a floor below which every offset is acked
// (or removed by retention) and a bitmap of the acked offsets above it. The floor is kept
// at the lowest offset that is not acked: adding the floor's own offset moves it up over
// every contiguous acked offset, and the words wholly below it are dropped.
//
// Bound: every set bit lies in [floor, floor+AckSpanMax) (the Manager keeps acks within
// floor+AckWindowMax), so the bitmap holds at most AckSpanMax/64 words. Each word is
// dropped once, so moving the floor costs amortised O(1) per acked offset.
type ackSet struct {
	floor uint64   // lowest offset not acked; no bit below it is set
	base  uint64   // offset of bit 0 of words[0]: a multiple of 64, at most floor
	words []uint64 // words[0] holds the floor when not empty
	count int      // bits set
}

func newAckSet(floor uint64) *ackSet {
	return &ackSet{floor: floor, base: floor &^ 63}
}

// has reports whether off is acked (offsets below the floor are).
func (s *ackSet) has(off uint64) bool {
	if off < s.floor {
		return true
	}
	i := (off - s.base) / 64
	return i < uint64(len(s.words)) && s.words[i]&(1<<(off%64)) != 0
}

// add marks off acked and moves the floor up when off was the floor. It reports false
// when off was acked already.
func (s *ackSet) add(off uint64) bool {
	if s.has(off) {
		return false
	}
	s.setBit(off)
	if off == s.floor {
		s.advance()
	}
	return true
}

// setBit sets the bit of off, which must be at or above the floor and not set, without
// moving the floor.
func (s *ackSet) setBit(off uint64) {
	assert.That(
		off >= s.floor && off-s.floor < AckSpanMax,
		"lease: acked offset outside [floor, floor+AckSpanMax)",
	)
	i := int((off - s.base) / 64)
	if i >= len(s.words) {
		s.words = append(s.words, make([]uint64, i+1-len(s.words))...)
	}
	assert.That(s.words[i]&(1<<(off%64)) == 0, "lease: offset acked twice")
	s.words[i] |= 1 << (off % 64)
	s.count++
}

// advance moves the floor over the run of acked offsets starting at it.
func (s *ackSet) advance() {
	for {
		i := (s.floor - s.base) / 64
		if i >= uint64(len(s.words)) {
			break
		}
		sh := s.floor % 64
		run := bits.TrailingZeros64(^(s.words[i] >> sh)) // ones from the floor on, at most 64-sh
		if run == 0 {
			break
		}
		mask := (uint64(1)<<run - 1) << sh // run == 64 gives all ones: Go shifts past the width give 0
		s.words[i] &^= mask
		s.count -= run
		s.floor += uint64(run)
	}
	s.trim()
}

// raiseFloor moves the floor up to at least f, forgetting the acked offsets below it (they
// are covered by the floor), then over the acked run that follows.
func (s *ackSet) raiseFloor(f uint64) {
	if f <= s.floor {
		return
	}
	for i := range s.words {
		lo := s.base + uint64(i)*64
		if lo >= f {
			break
		}
		m := ^uint64(0)
		if f-lo < 64 {
			m = uint64(1)<<(f-lo) - 1
		}
		s.count -= bits.OnesCount64(s.words[i] & m)
		s.words[i] &^= m
	}
	s.floor = f
	s.advance()
}

// trim drops the words wholly below the floor.
func (s *ackSet) trim() {
	drop := min((s.floor-s.base)/64, uint64(len(s.words)))
	s.words = s.words[drop:]
	s.base += drop * 64
	if len(s.words) == 0 {
		s.base = s.floor &^ 63
	}
	assert.That(
		s.base <= s.floor && s.floor-s.base < 64 || len(s.words) == 0,
		"lease: ack set base away from the floor",
	)
	assert.That(s.count >= 0, "lease: ack set count negative")
}

// highest returns the highest acked offset at or above the floor.
func (s *ackSet) highest() (uint64, bool) {
	for i := len(s.words) - 1; i >= 0; i-- {
		if w := s.words[i]; w != 0 {
			return s.base + uint64(i)*64 + uint64(63-bits.LeadingZeros64(w)), true
		}
	}
	return 0, false
}

// each calls f for every acked offset at or above the floor, in increasing order.
func (s *ackSet) each(f func(uint64)) {
	for i, w := range s.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			f(s.base + uint64(i)*64 + uint64(b))
			w &= w - 1
		}
	}
}
