package sim

import (
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
)

// The faults of issue 11, beyond the per-operation coins of disk.go:
//
//   - EIO (EIOProb, per kind): Create, WriteAt, Truncate, Rename, Remove and SyncDir fail
//     with disk.ErrIO and change nothing: no entry is made, moved or removed, no byte
//     written, and a failed SyncDir leaves its journal pending (a crash may still commit
//     any prefix of it).
//   - A full device (FillProb): a WriteAt that would grow a file fills the device instead;
//     from then on every growth (WriteAt or Truncate past a file's end) fails with
//     disk.ErrNoSpace until a Remove or a shrinking Truncate frees space, or the faults are
//     switched off (the operator freed space while the simulator heals), or (FullKillsMax)
//     the process was killed that many times on the full device: an operator who sees the
//     broker down on a full disk frees space. Without that bound a full device is forever
//     once the process fails on it: the broker fails on ENOSPC (WAL, metastore, ack log),
//     and every recovery starts by rewriting raft.log through raft.log.tmp, a growth that
//     fails again, so the process crash-loops without ever running retention (node seeds
//     15, 36, 73; cluster seed 55, whose topic was never made).
//   - Misdirected writes (MisdirectProb): the write reports success and the cache holds its
//     bytes, but on the device its range keeps the bytes it had, and the data lands on the
//     dirty bytes of a file chosen at random (possibly the same file at another offset),
//     which the cache of that file does not show: both files' device reads see the damage,
//     and so does a crash once either file is synced. With no dirty bytes anywhere the data
//     lands on free space and only the lost range shows.
//   - Bit rot at rest (RotProb): after a successful Sync one bit of the file's durable
//     image, among its bytes that are not dirty, flips. The cache keeps the good copy; the
//     device read and a machine crash show the rot.
//   - Kill: a process crash (ProcessProb: the page cache survives, dirty pages stay dirty
//     and may still reach the device later; directory journals stay pending) or a machine
//     crash (Crash).
//   - Land: the writes a simulator had in flight at a crash reach the cache or not.

// eio draws the EIO fault of kind k.
func (d *Disk) eio(k disk.Kind, name string) error {
	if !d.faults || !d.fr.Chance(d.cfg.EIOProb[k]) {
		return nil
	}
	d.stats.EIOs[k]++
	return fmt.Errorf("sim: %s %q: injected: %w", k, name, disk.ErrIO)
}

// misdirect lands data on the device over dirty bytes of a random file (its writeback
// bytes change; its cache does not), or on free space when nothing is dirty.
func (d *Disk) misdirect(data []byte) {
	d.stats.WritesMisdirect++
	var victims []*inode
	var names []string
	for _, dn := range slices.Sorted(maps.Keys(d.dirs)) {
		dr := d.dirs[dn]
		for _, name := range slices.Sorted(maps.Keys(dr.cur)) {
			if ino := dr.cur[name]; len(ino.dirty) > 0 && !slices.Contains(victims, ino) {
				victims = append(victims, ino)
				names = append(names, path.Join(dn, name))
			}
		}
	}
	if len(victims) == 0 {
		return
	}
	i := d.fr.Intn(len(victims))
	v := victims[i]
	d.noteDamage(names[i])
	sp := v.dirty[d.fr.Intn(len(v.dirty))]
	at := sp.lo + d.fr.Intn(sp.hi-sp.lo)
	n := min(len(data), sp.hi-at)
	v.meant = append(v.meant, meantWrite{off: at, data: v.writeback(at, at+n), stored: slices.Clone(data[:n])})
	d.stats.MisdirectLanded++
}

// rot flips one bit of the clean durable bytes of ino, if it has any, and reports whether
// it did.
func (d *Disk) rot(ino *inode) bool {
	if !d.faults || len(ino.durable) == 0 || !d.fr.Chance(d.cfg.RotProb) {
		return false
	}
	return d.rotByte(ino, d.fr.Intn(len(ino.durable)))
}

// RotAt is bit rot placed by a simulator: one bit, drawn from the fault stream, of the
// durable byte at off of the durable file name flips (the cache keeps the good copy). It
// reports whether it did: a name not durably linked, an offset past the durable image, or
// a dirty byte (the next sync overwrites it) is left alone. The file's directory is
// counted damaged (Damage).
func (d *Disk) RotAt(name string, off int64) bool {
	dn, base := path.Split(name)
	dr := d.dirs[cleanDir(dn)]
	if dr == nil || dr.durable[base] == nil || off < 0 || off >= int64(len(dr.durable[base].durable)) {
		return false
	}
	if !d.rotByte(dr.durable[base], int(off)) {
		return false
	}
	d.noteDamage(name)
	return true
}

// CorruptDirtyAt is a silently corrupted write placed by a simulator: one bit, drawn
// from the fault stream, of the dirty byte at off of file name flips on its way to the
// device, while the cache keeps the byte as written. A device read and the next sync see
// the flipped bit; a cached read does not. It reports whether it did: a name that does
// not exist or a byte that is not dirty is left alone. Counted as a corrupted write (and
// as damage to the file's directory).
func (d *Disk) CorruptDirtyAt(name string, off int64) bool {
	ino, err := d.lookup("corrupt", name)
	if err != nil || off < 0 || off >= int64(len(ino.cur)) || len(ino.dirty.within(int(off), int(off)+1)) == 0 {
		return false
	}
	at := int(off)
	b := ino.writeback(at, at+1)
	b[0] ^= 1 << d.fr.Intn(8)
	ino.forgetMeant(at, at+1)
	ino.meant = append(ino.meant, meantWrite{off: at, data: []byte{ino.cur[at]}, stored: b})
	d.stats.WritesCorrupted++
	d.noteDamage(name)
	return true
}

// rotByte flips one bit of the durable byte at of ino, unless that byte is dirty or
// past the cached file's end (a pending truncate).
func (d *Disk) rotByte(ino *inode, at int) bool {
	if at >= len(ino.cur) || len(ino.dirty.within(at, at+1)) > 0 {
		return false // dirty: the next sync overwrites it anyway
	}
	d.stats.Rots++
	bit := d.fr.Intn(8)
	ino.durable[at] ^= 1 << bit
	// The cache keeps the good byte: record the deviation so that a read fault never
	// turns a device read of the rotten byte back into the good one.
	ino.meant = append(ino.meant, meantWrite{off: at, data: []byte{ino.cur[at]}, stored: []byte{ino.durable[at]}})
	return true
}

// full reports whether growing by grow bytes is refused because the device filled up.
func (d *Disk) full(grow int64) bool {
	if !d.filled && d.faults && d.fr.Chance(d.cfg.FillProb) {
		d.stats.Fills++
		d.filled, d.fullAt, d.fullKills = true, d.used(), 0
	}
	return d.filled && d.used()+grow > d.fullAt
}

// freed ends a full device once space was freed.
func (d *Disk) freed() {
	if d.filled && d.used() < d.fullAt {
		d.filled = false
	}
}

// Kill crashes the disk's process: with ProcessProb a process crash (ProcessCrash), else a
// machine crash (Crash). It reports whether the page cache survived.
func (d *Disk) Kill() (process bool) {
	d.operatorFrees()
	if d.cr.Chance(d.cfg.ProcessProb) {
		d.ProcessCrash()
		return true
	}
	d.Crash()
	return false
}

// Filled reports whether the device filled up (FillProb) and is still full.
func (d *Disk) Filled() bool { return d.filled }

// FreeFull is the operator freeing a full device (a simulator's decision: the node no
// longer dies of a full device, so Kills alone may never free it).
func (d *Disk) FreeFull() {
	if d.filled {
		d.filled = false
		d.stats.FillsFreed++
	}
}

// operatorFrees counts a Kill on a full device and frees the device at FullKillsMax.
func (d *Disk) operatorFrees() {
	if !d.filled || d.cfg.FullKillsMax <= 0 {
		return
	}
	if d.fullKills++; d.fullKills >= d.cfg.FullKillsMax {
		d.filled = false
		d.stats.FillsFreed++
	}
}

// ProcessCrash is the crash of the process alone: the kernel keeps the page cache, so
// the files read as they did, dirty bytes stay dirty (a later sync or machine crash
// decides their fate) and directory journals stay pending. Only the writes the process
// had in flight are affected, and the simulator decides those with Land.
func (d *Disk) ProcessCrash() {
	d.stats.ProcessCrashes++
}

// Land decides the fate of write ops that were in flight at a crash (issued, not yet
// performed): each reaches the cache with LandProb, in the order given, as a write
// without faults; the others never happen. Ops of other kinds are ignored. It returns
// the number that landed. Call it before Crash (whose model then decides what of them
// the device keeps) or after ProcessCrash.
func (d *Disk) Land(ops []disk.Op) int {
	n := 0
	for _, op := range ops {
		if op.Kind != disk.KindWriteAt || len(op.Data) == 0 || op.Off < 0 {
			continue
		}
		ino, err := d.lookup("land", op.Name)
		if err != nil || !d.cr.Chance(d.cfg.LandProb) {
			d.stats.InFlightDropped++
			continue
		}
		o := int(op.Off)
		ino.forgetMeant(o, o+len(op.Data))
		ino.write(o, op.Data)
		d.stats.InFlightLanded++
		n++
	}
	return n
}

// DrawEIO draws EIOProb for a simulator's options: for WriteAt one of probs, uniformly,
// and for each of Create, Truncate, Rename, Remove (RemoveDir too) and SyncDir one of probs times
// eioRareFactor (capped at eioRareMax): those ops are a hundred times rarer than writes,
// and at a write's rate their EIO would almost never fire.
func DrawEIO(r *rng.Rand, probs ...float64) [disk.KindCount]float64 {
	var out [disk.KindCount]float64
	out[disk.KindWriteAt] = probs[r.Intn(len(probs))]
	for _, k := range []disk.Kind{disk.KindCreate, disk.KindTruncate, disk.KindRename, disk.KindRemove, disk.KindSyncDir} {
		out[k] = min(eioRareMax, probs[r.Intn(len(probs))]*eioRareFactor)
	}
	out[disk.KindRemoveDir] = out[disk.KindRemove] // no draw of its own: the options drawn after stay as they were
	return out
}

// Scaling of DrawEIO for the ops rarer than writes.
const (
	eioRareFactor = 20
	eioRareMax    = 0.1
)

// FaultString prints the faults of disk_faults.go for a simulator's option line.
func (c DiskConfig) FaultString() string {
	k := func(kind disk.Kind) float64 { return c.EIOProb[kind] }
	return fmt.Sprintf("eio=[create %g write %g truncate %g rename %g remove %g syncdir %g] fill=%g full_kills=%d misdirect=%g rot=%g process=%g land=%.3f",
		k(disk.KindCreate), k(disk.KindWriteAt), k(disk.KindTruncate), k(disk.KindRename), k(disk.KindRemove), k(disk.KindSyncDir),
		c.FillProb, c.FullKillsMax, c.MisdirectProb, c.RotProb, c.ProcessProb, c.LandProb)
}
