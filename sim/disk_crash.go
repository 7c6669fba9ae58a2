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
				out = put(out, s.lo, ino.cur[s.lo:s.hi])
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
				out = put(out, s.lo, ino.cur[s.lo:s.hi])
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
		copy(b[s.lo:s.hi], ino.cur[s.lo:s.hi])
	}
	ino.durable, ino.dirty, ino.sized = b, nil, false
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

// forgetMeant drops the corrupted writes overlapping [lo, hi): those bytes change again.
func (ino *inode) forgetMeant(lo, hi int) {
	ino.meant = slices.DeleteFunc(ino.meant, func(m meantWrite) bool { return m.off < hi && lo < m.off+len(m.data) })
}

// masks reports whether out, read at off, shows some corrupted write's range as it was
// meant to be stored while the file holds other bytes there.
func (ino *inode) masks(out []byte, off int) bool {
	for _, m := range ino.meant {
		lo, hi := max(off, m.off), min(off+len(out), m.off+len(m.data), len(ino.cur))
		if lo < hi && bytes.Equal(out[lo-off:hi-off], m.data[lo-m.off:hi-m.off]) && !bytes.Equal(ino.cur[lo:hi], m.data[lo-m.off:hi-m.off]) {
			return true
		}
	}
	return false
}
