package sim

import (
	"slices"
	"sort"
)

// span is the half-open byte range [lo, hi) of a file.
type span struct{ lo, hi int }

// spans is a sorted list of disjoint, non-adjacent byte ranges: the dirty bytes of an
// inode. Writes are mostly appends, so the list stays short.
type spans []span

// add marks [lo, hi) and merges it with every range it overlaps or touches.
func (s spans) add(lo, hi int) spans {
	if lo >= hi {
		return s
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].hi >= lo })
	j := i
	for j < len(s) && s[j].lo <= hi {
		lo, hi = min(lo, s[j].lo), max(hi, s[j].hi)
		j++
	}
	return slices.Replace(s, i, j, span{lo, hi})
}

// cut forgets every byte at or beyond n.
func (s spans) cut(n int) spans {
	for len(s) > 0 {
		last := &s[len(s)-1]
		switch {
		case last.lo >= n:
			s = s[:len(s)-1]
		case last.hi > n:
			last.hi = n
			return s
		default:
			return s
		}
	}
	return s
}

// within returns the parts of s that fall inside [lo, hi), in order.
func (s spans) within(lo, hi int) []span {
	var out []span
	if lo >= hi {
		return nil
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].hi > lo })
	for ; i < len(s) && s[i].lo < hi; i++ {
		out = append(out, span{max(lo, s[i].lo), min(hi, s[i].hi)})
	}
	return out
}

// units returns, ascending, the indexes of the size-byte units (pages or sectors) that
// hold at least one byte of s.
func (s spans) units(size int) []int {
	var out []int
	for _, sp := range s {
		first := sp.lo / size
		if n := len(out); n > 0 && out[n-1] == first {
			first++
		}
		for u := first; u <= (sp.hi-1)/size; u++ {
			out = append(out, u)
		}
	}
	return out
}
