package sim

import (
	"bytes"
	"maps"
	"path"
	"slices"

	"github.com/narad/narad/core/rng"
)

// Crash loses everything that was not durable, following the crash model in the Disk
// documentation. Afterwards the visible state equals the new durable state.
func (d *Disk) Crash() {
	d.stats.Crashes++
	for _, dn := range slices.Sorted(maps.Keys(d.dirs)) {
		d.crashDir(dn)
	}
	seen := map[*inode]bool{}
	for _, dn := range slices.Sorted(maps.Keys(d.dirs)) {
		dr := d.dirs[dn]
		for _, name := range slices.Sorted(maps.Keys(dr.durable)) {
			if ino := dr.durable[name]; !seen[ino] {
				seen[ino] = true
				d.crashInode(ino)
			}
		}
	}
}

// crashDir commits a random prefix of the journal of directory dn.
func (d *Disk) crashDir(dn string) {
	dr := d.dirs[dn]
	if n := len(dr.journal); n > 0 {
		k := d.cr.Intn(n + 1)
		for _, op := range dr.journal[:k] {
			op.apply(dr.durable)
		}
		d.stats.DirOpsKept += uint64(k)
		d.stats.DirOpsLost += uint64(n - k)
	}
	dr.journal = nil
	dr.cur = cloneEntries(dr.durable)
	d.tidy(dn)
}

// crashInode replaces both images of ino by what a crash leaves of it.
func (d *Disk) crashInode(ino *inode) {
	applySize := false
	if ino.sized {
		applySize = d.cr.Chance(0.5)
		if applySize {
			d.stats.SizesKept++
		} else {
			d.stats.SizesLost++
		}
	}
	c := &d.cfg
	img, fc := ino.image(d.cr, applySize, c.CrashKeepProb, c.CrashTearProb, c.CrashGarbageProb)
	d.stats.PagesKept += uint64(fc.kept)
	d.stats.PagesDropped += uint64(fc.dropped)
	d.stats.PagesTorn += uint64(fc.torn)
	d.stats.SectorsGarbage += uint64(fc.garbage)
	ino.cur, ino.durable = img, slices.Clone(img)
	ino.dirty, ino.sized = nil, false
}

// Size reports the size of the file name as reads see it (the page cache's), like a
// stat; it is not an operation and draws no fault.
func (d *Disk) Size(name string) (int, error) {
	ino, err := d.lookup("size", name)
	if err != nil {
		return 0, err
	}
	return len(ino.cur), nil
}

// DurableFiles returns the durable image: for every durably linked name (its full path),
// a copy of its durable bytes. It is what a crash that loses every pending change would
// leave; a crash may also land some pending changes (writes, truncates, entry operations).
func (d *Disk) DurableFiles() map[string][]byte {
	out := map[string][]byte{}
	for dn, dr := range d.dirs { //narad:unordered (builds a map)
		for name, ino := range dr.durable { //narad:unordered
			out[path.Join(dn, name)] = append([]byte{}, ino.durable...)
		}
	}
	return out
}

// fates counts what happened to the dirty pages of one image.
type fates struct{ kept, dropped, torn, garbage int }

// image returns a fresh copy of what the device holds after the dirty pages of ino met
// their fates: the base image (with the pending size change if applySize), then per dirty
// page keep (probability keep), tear (probability tear, sectors garbled with probability
// garbage) or drop. It draws from r in ascending page order.
func (ino *inode) image(r *rng.Rand, applySize bool, keep, tear, garbage float64) ([]byte, fates) {
	out := ino.baseCopy(applySize)
	var fc fates
	for _, p := range ino.dirty.units(PageSize) {
		lo, hi := p*PageSize, (p+1)*PageSize
		u := r.Float64()
		switch {
		case u < keep:
			fc.kept++
			for _, s := range ino.dirty.within(lo, hi) {
				out = put(out, s.lo, ino.writeback(s.lo, s.hi))
			}
		case u < keep+tear:
			fc.torn++
			var g int
			out, g = ino.tear(r, out, lo, hi, garbage)
			fc.garbage += g
		default:
			fc.dropped++
		}
	}
	return out, fc
}

// tear applies a torn page [lo, hi) to out: per sector holding dirty bytes, those bytes
// become garbage (probability garbage), else new or old with equal chance. It returns
// the grown out and the number of garbage sectors.
func (ino *inode) tear(r *rng.Rand, out []byte, lo, hi int, garbage float64) ([]byte, int) {
	n := 0
	for _, sec := range spans(ino.dirty.within(lo, hi)).units(SectorSize) {
		parts := ino.dirty.within(sec*SectorSize, (sec+1)*SectorSize)
		switch {
		case r.Chance(garbage):
			n++
			for _, s := range parts {
				g := make([]byte, s.hi-s.lo)
				_, _ = r.Read(g)
				out = put(out, s.lo, g)
			}
		case r.Chance(0.5):
			for _, s := range parts {
				out = put(out, s.lo, ino.writeback(s.lo, s.hi))
			}
		}
	}
	return out, n
}

// baseCopy returns a fresh copy of the durable bytes, with the pending size change
// applied if applySize: cut at the smallest truncated size, zero-extended to the last.
func (ino *inode) baseCopy(applySize bool) []byte {
	if !applySize || !ino.sized {
		return slices.Clone(ino.durable)
	}
	b := slices.Clone(ino.durable[:min(len(ino.durable), ino.truncMin)])
	return growZero(b, ino.truncLast)
}

// sync is a successful fdatasync: durable becomes the size-changed durable image, sized
// like cur, with every dirty byte copied from cur. It reuses durable's memory.
func (ino *inode) sync() {
	b := ino.durable
	if ino.sized {
		b = b[:min(len(b), ino.truncMin)]
	}
	n := len(ino.cur)
	if len(b) > n {
		b = b[:n]
	}
	b = growZero(b, n)
	for _, s := range ino.dirty {
		copy(b[s.lo:s.hi], ino.writeback(s.lo, s.hi))
	}
	ino.durable, ino.dirty, ino.sized = b, nil, false
}

// writeback returns a fresh copy of what writeback stores on the device for the bytes
// [lo, hi) of the cache (hi at most len(cur)): the cached bytes, except where a
// corrupted, lost or misdirected write left other bytes for the device. Later entries of
// meant were made later and win.
func (ino *inode) writeback(lo, hi int) []byte {
	hi = min(hi, len(ino.cur))
	if lo >= hi {
		return []byte{}
	}
	out := slices.Clone(ino.cur[lo:hi])
	for _, m := range ino.meant {
		a, b := max(lo, m.off), min(hi, m.off+len(m.stored))
		if a < b {
			copy(out[a-lo:b-lo], m.stored[a-m.off:b-m.off])
		}
	}
	return out
}

// device returns a fresh copy of the device's bytes [lo, hi) (hi at most len(cur)) as a
// read bypassing the cache sees them: what a successful sync would make durable. Clean
// bytes come from the durable image (zero past its end or past a pending truncation),
// dirty ones as writeback stores them.
func (ino *inode) device(lo, hi int) []byte {
	hi = min(hi, len(ino.cur))
	if lo >= hi {
		return []byte{}
	}
	out := make([]byte, hi-lo)
	end := len(ino.durable)
	if ino.sized {
		end = min(end, ino.truncMin)
	}
	if lo < end {
		copy(out, ino.durable[lo:min(hi, end)])
	}
	for _, s := range ino.dirty.within(lo, hi) {
		copy(out[s.lo-lo:s.hi-lo], ino.writeback(s.lo, s.hi))
	}
	return out
}

// write stores b at off in cur and marks it dirty.
func (ino *inode) write(off int, b []byte) {
	ino.cur = put(ino.cur, off, b)
	ino.dirty = ino.dirty.add(off, off+len(b))
}

// truncate sets the size of cur and records the pending size change.
func (ino *inode) truncate(size int) {
	ino.forgetMeant(size, MaxFileSize)
	if size < len(ino.cur) {
		ino.cur = ino.cur[:size]
		ino.dirty = ino.dirty.cut(size)
	} else {
		ino.cur = growZero(ino.cur, size)
	}
	if !ino.sized || size < ino.truncMin {
		ino.truncMin = size
	}
	ino.sized, ino.truncLast = true, size
}

// put copies b into out at off, growing out with zeros as needed.
func put(out []byte, off int, b []byte) []byte {
	out = growZero(out, off+len(b))
	copy(out[off:], b)
	return out
}

// growZero extends b with zero bytes to length n (no-op if already that long).
func growZero(b []byte, n int) []byte {
	old := len(b)
	if n <= old {
		return b
	}
	b = slices.Grow(b, n-old)[:n]
	clear(b[old:])
	return b
}

// forgetMeant forgets the device deviations inside [lo, hi): those bytes change again.
// An entry overlapping the range keeps its parts outside it.
func (ino *inode) forgetMeant(lo, hi int) {
	var out []meantWrite
	for _, m := range ino.meant {
		end := m.off + len(m.data)
		if end <= lo || hi <= m.off {
			out = append(out, m)
			continue
		}
		if m.off < lo {
			out = append(out, meantWrite{off: m.off, data: m.data[:lo-m.off], stored: m.stored[:lo-m.off]})
		}
		if hi < end {
			out = append(out, meantWrite{off: hi, data: m.data[hi-m.off:], stored: m.stored[hi-m.off:]})
		}
	}
	ino.meant = out
}

// masks reports whether out, read at off from view (the bytes the read was served
// from, before its fault), shows some corrupted write's range as it was meant to be
// stored while view holds other bytes there.
func (ino *inode) masks(out, view []byte, off int) bool {
	for _, m := range ino.meant {
		lo, hi := max(off, m.off), min(off+len(out), m.off+len(m.data))
		if lo < hi && bytes.Equal(out[lo-off:hi-off], m.data[lo-m.off:hi-m.off]) && !bytes.Equal(view[lo-off:hi-off], m.data[lo-m.off:hi-m.off]) {
			return true
		}
	}
	return false
}

// flipBit flips one random bit of the non-empty b and returns its index.
func flipBit(b []byte, r *rng.Rand) int {
	bit := r.Intn(len(b) * 8)
	flipAt(b, bit)
	return bit
}

func flipAt(b []byte, bit int) { b[bit/8] ^= 1 << (bit % 8) }
