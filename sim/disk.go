package sim

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
)

// Disk is an in-memory file system with the fault model of DESIGN.md section 3. It
// implements disk.FS and is the executable form of the contracts written on the disk.Kind
// constants. It is not safe for concurrent use: the simulator runs it in one goroutine and
// performs each op to completion when it is issued.
//
// # Files
//
// A directory entry maps a name to an inode. An inode holds two images:
//
//   - cur, what reads see (the page cache), and
//   - durable, what survives a crash (the device),
//
// plus the dirty bytes (those written since the last successful Sync, kept as a list of
// byte ranges) and a pending size change (whether Truncate was called since that Sync, the
// smallest size it set and the last size it set).
//
//   - WriteAt copies the data into cur, growing the file with a zero-filled gap if the
//     offset is past the end, and marks exactly the written bytes dirty (gap bytes are not
//     dirty: they were never written). A zero-length write does nothing.
//   - ReadAt returns a fresh copy of cur[off:off+n], shorter only at end of file; at or
//     past the end it returns empty data and no error.
//   - Truncate sets the size of cur (a growth is zero-filled) and forgets the dirty marks
//     past the new size. The durable size changes at the next successful Sync.
//   - Sync (fdatasync) makes durable equal to the pending size change applied to durable
//     (cut at the smallest truncated size, zero-extended) with every dirty byte as
//     writeback stores it (from cur, except where a damaged write left other bytes; see
//     Page cache and device), sized like cur; then nothing is dirty. Without earlier
//     failures or damaged writes that is simply durable = cur.
//   - A failed Sync (disk.ErrIO, drawn with SyncFailProb) follows Linux: each 4 KiB page
//     holding dirty bytes independently reaches durable or not (1/2 each), the pending size
//     change reaches durable, and then the dirty marks are cleared. A later successful Sync
//     copies only dirty bytes, so the lost pages stay lost on the device while cur still
//     shows them: the "retry fsync and trust it" bug is observable.
//
// # Directories
//
// Directories exist implicitly: a file's directory is path.Dir(name), "." is the root, a
// directory with no files lists as empty and SyncDir of it does nothing. Directories
// themselves are always durable; only their entries are journaled. A name may be both a
// file and the directory of other files; the simulator does not forbid it.
//
// Each directory keeps its durable entry map, its current entry map and, in order, the
// journal of entry operations since its last SyncDir: create (the name now points to a
// new empty inode, replacing any earlier one), rename (the target now points to the
// source's inode and the source is gone, in one step) and remove. SyncDir makes the whole
// journal durable. Renames across directories are not supported (ErrCrossDir), since a
// rename journaled in two directories could not be atomic.
//
// # Crash
//
// Crash applies, per directory in name order, a uniformly random prefix (0 to all) of the
// journal to the durable entries: journals commit in order, and a rename lands whole or
// not at all. An inode no entry reaches afterwards is gone. For each remaining inode:
//
//   - A pending size change lands or not (1/2 each): the base image is durable, or durable
//     cut at the smallest truncated size and zero-extended to the last one.
//   - Each 4 KiB page holding dirty bytes is kept with CrashKeepProb (its dirty bytes take
//     their writeback value), torn with CrashTearProb, else dropped (its dirty bytes keep their
//     base value, or are cut when past the base's end). In a torn page each 512-byte
//     sector holding dirty bytes is garbage with CrashGarbageProb (its dirty bytes become
//     random bytes), else new or old with equal chance.
//   - Bytes that are not dirty keep their base value: garbage only ever replaces dirty
//     bytes. The file is as long as the base, extended to cover the last kept, new or
//     garbage byte past it; bytes in between that no surviving write covers are zero.
//
// Afterwards cur = durable = the result, nothing is dirty and no journal is pending.
// Outcomes are drawn from the generator in a fixed order (directories, then names, then
// pages, sorted), so a seed fixes the crash.
//
// # Per-operation faults
//
// While faults are on (the default; see SetFaults) each op may draw its fault: a WriteAt
// fails with disk.ErrNoSpace (NoSpaceProb, nothing written) or is silently corrupted
// (WriteCorruptProb: reported as a success, and the page cache holds the bytes written,
// but the device gets them with one bit flipped, or, half the time, not at all: the
// range keeps its previous device bytes); a ReadAt fails with disk.ErrIO (ReadErrorProb)
// or returns a copy with one bit flipped (ReadCorruptProb), never one that makes a
// corrupted write read as the bytes it was meant to store; a Sync fails as above
// (SyncFailProb). Read faults are transient and never change the stored bytes.
// CapacityBytes applies whether faults are on or not. The faults of disk_faults.go (EIO
// on every mutating op, a device that stays full, misdirected writes, bit rot, process
// crashes and writes in flight at a crash) are documented there.
//
// # Page cache and device
//
// cur is the page cache: a ReadAt returns it, and it holds what was written. The device
// holds durable for clean bytes and, for dirty bytes, what writeback stores: the cached
// bytes except where a corrupted, lost or misdirected write (kept in meant) left others.
// ReadDevice (disk.Op.Device) returns that device view; Sync, a failed Sync and Crash
// move it into durable. So a read-back through the cache proves nothing about the device,
// and only a device read sees a silently damaged write before a machine crash does.

// # Errors
//
// Every error matches disk.ErrIO, disk.ErrNoSpace or disk.ErrNotExist under errors.Is. A
// missing file gives disk.ErrNotExist; invalid names, negative offsets, sizes or lengths
// give ErrInvalid, and cross-directory renames ErrCrossDir (both match disk.ErrIO: they
// are bugs of the caller, which must stop); a file beyond MaxFileSize gives
// ErrFileTooLarge (matches disk.ErrNoSpace).
type Disk struct {
	cfg    DiskConfig
	faults bool
	fr     *rng.Rand // per-operation faults, including the pages a failed sync loses
	cr     *rng.Rand // crash outcomes
	dirs   map[string]*dir
	stats  DiskStats
	filled bool // the device filled up (FillProb) when fullAt bytes were used: no growth fits until space is freed
	fullAt int64
	damage map[string]uint64 // directory -> silent damage events to its files' device bytes (disk_damage.go)
	// fullKills counts the Kills since the device filled (FullKillsMax).
	fullKills int
}

// DiskConfig sets the fault model of a Disk. Probabilities are per operation (or per page
// and sector during a crash); zero disables a fault.
type DiskConfig struct {
	CapacityBytes    int64   // 0 = unlimited; a WriteAt or Truncate that would make the sum of current file sizes exceed it returns disk.ErrNoSpace and changes nothing
	NoSpaceProb      float64 // a WriteAt fails with disk.ErrNoSpace (transient), nothing written
	SyncFailProb     float64 // a Sync returns disk.ErrIO, loses about half the dirty pages for good and marks all clean
	ReadErrorProb    float64 // a ReadAt returns disk.ErrIO (transient; stored bytes unaffected)
	ReadCorruptProb  float64 // a ReadAt succeeds but one random bit of the returned copy is flipped (transient)
	WriteCorruptProb float64 // a WriteAt reports success but stores the data with one bit flipped, or (half the time) stores nothing of it
	CrashKeepProb    float64 // on Crash, per dirty 4 KiB page: keep the written bytes with this probability,
	CrashTearProb    float64 // tear the page with this probability, else drop it (revert to durable bytes)
	CrashGarbageProb float64 // within a torn page, per 512-byte sector: garbage with this probability; otherwise new or old with equal chance

	// The faults of issue 11 (see disk_faults.go).
	EIOProb       [disk.KindCount]float64 // indexed by disk.Kind: a Create, WriteAt, Truncate, Rename, Remove or SyncDir fails with disk.ErrIO and changes nothing (other kinds ignored)
	FillProb      float64                 // a WriteAt that grows a file fills the device: it and every later growth fail with disk.ErrNoSpace until a Remove or shrinking Truncate frees space
	FullKillsMax  int                     // a device still full at this many Kills of its process is freed by the operator (0: it stays full until the process frees space)
	MisdirectProb float64                 // a WriteAt reports success, the cache holds its bytes, but on the device its range keeps the old bytes and the data lands on dirty bytes of some file (or on free space)
	RotProb       float64                 // after a successful Sync, one bit of the file's clean durable bytes flips (bit rot at rest; the cache keeps the good copy)
	ProcessProb   float64                 // Kill: the crash is a process crash (page cache kept) with this probability, else a machine crash
	LandProb      float64                 // Land: a write in flight at a crash reaches the cache with this probability
}

// DiskStats counts what a Disk did and which faults it injected.
type DiskStats struct {
	Ops             [disk.KindCount]uint64 // calls by kind, indexed by disk.Kind, failed calls included
	BytesWritten    uint64                 // bytes of successful (possibly silently corrupted) WriteAts
	BytesRead       uint64                 // bytes returned by successful ReadAts
	NoSpaceFull     uint64                 // WriteAt/Truncate refused because of CapacityBytes
	NoSpaceInjected uint64                 // WriteAt failed by NoSpaceProb
	WritesCorrupted uint64                 // WriteAt stored with a bit flipped
	WritesLost      uint64                 // WriteAt that stored nothing
	ReadErrors      uint64                 // ReadAt failed by ReadErrorProb
	ReadsCorrupted  uint64                 // ReadAt returned a flipped bit
	SyncsFailed     uint64                 // Sync failed by SyncFailProb
	SyncPagesLost   uint64                 // dirty pages that failed syncs did not make durable
	Crashes         uint64                 // calls of Crash
	DirOpsKept      uint64                 // unsynced journal entries a crash made durable
	DirOpsLost      uint64                 // unsynced journal entries a crash discarded
	SizesKept       uint64                 // pending size changes a crash applied
	SizesLost       uint64                 // pending size changes a crash discarded
	PagesKept       uint64                 // dirty pages a crash kept
	PagesDropped    uint64                 // dirty pages a crash dropped
	PagesTorn       uint64                 // dirty pages a crash tore
	SectorsGarbage  uint64                 // sectors of torn pages filled with garbage

	DeviceReads     uint64                 // ReadDevice calls (also counted in Ops[disk.KindReadAt])
	EIOs            [disk.KindCount]uint64 // ops failed by EIOProb, by kind
	Fills           uint64                 // times FillProb filled the device
	FillsFreed      uint64                 // full devices the operator freed after FullKillsMax Kills
	WritesMisdirect uint64                 // WriteAt whose bytes went elsewhere on the device
	MisdirectLanded uint64                 // misdirected writes that landed on another file's (or the same file's) dirty bytes
	Rots            uint64                 // bits flipped at rest by RotProb
	ProcessCrashes  uint64                 // Kill chose a process crash
	InFlightLanded  uint64                 // writes in flight at a crash that reached the cache
	InFlightDropped uint64                 // writes in flight at a crash that did not
}

// Geometry and limits of the simulated device.
const (
	PageSize    = 4096    // unit of crash fates and of failed-sync losses
	SectorSize  = 512     // unit of tearing inside a torn page
	MaxFileSize = 1 << 32 // larger files are refused with ErrFileTooLarge
)

// Errors of the simulated disk beyond the contract's; each wraps the contract error the
// core sees.
var (
	ErrInvalid      = fmt.Errorf("sim: invalid argument: %w", disk.ErrIO)
	ErrCrossDir     = fmt.Errorf("sim: rename across directories is not supported: %w", disk.ErrIO)
	ErrFileTooLarge = fmt.Errorf("sim: file too large: %w", disk.ErrNoSpace)
)

var _ disk.FS = (*Disk)(nil)

type inode struct {
	cur       []byte // what reads see: the page cache
	durable   []byte // what survives a crash: the device; never aliases cur or a returned slice
	dirty     spans  // bytes written since the last successful sync, all < len(cur)
	sized     bool   // Truncate was called since the last successful sync
	truncMin  int    // when sized: the smallest size Truncate set
	truncLast int    // when sized: the last size Truncate set
	meant     []meantWrite
}

// meantWrite is a range whose device bytes differ from what was written to it: a
// silently corrupted, lost or misdirected write (or the landing place of a misdirected
// one). data is what the cache holds (what was meant); stored is what writeback puts on
// the device for those bytes while they are dirty. A read fault is bounded (DESIGN.md
// section 3: damage detected, never silently served): it never flips the one bit that
// makes a damaged range read back as meant, which would fool every read-back
// verification. Independent faults that cancel exactly are a coincidence of the
// simulator's inflated rates, not a failure a device makes.
type meantWrite struct {
	off    int
	data   []byte
	stored []byte
}

type dir struct {
	cur     map[string]*inode // entries reads and List see
	durable map[string]*inode // entries that survive a crash
	journal []dirOp           // entry operations since the last SyncDir, in order
}

type dirOpKind uint8

const (
	opCreate dirOpKind = iota + 1
	opRename
	opRemove
)

// dirOp is one journaled entry operation; names are base names inside the directory.
type dirOp struct {
	kind dirOpKind
	name string
	to   string // opRename
	ino  *inode // opCreate
}

func (op dirOp) apply(entries map[string]*inode) {
	switch op.kind {
	case opCreate:
		entries[op.name] = op.ino
	case opRename:
		entries[op.to] = entries[op.name]
		delete(entries, op.name)
	case opRemove:
		delete(entries, op.name)
	}
}

// NewDisk returns an empty disk whose faults are drawn from streams forked from r. Faults
// start switched on.
func NewDisk(r *rng.Rand, cfg DiskConfig) *Disk {
	return &Disk{
		cfg:    cfg,
		faults: true,
		fr:     r.Fork(),
		cr:     r.Fork(),
		dirs:   map[string]*dir{},
	}
}

// SetFaults switches the per-operation faults on or off. When off, no probabilistic fault
// is injected (CapacityBytes still applies); the crash model still applies to Crash, which
// the caller chooses to call.
func (d *Disk) SetFaults(on bool) {
	d.faults = on
	if !on {
		d.filled = false
	}
}

// SetConfig replaces the fault model from the next operation on (tests that switch a
// fault on after setting a disk up).
func (d *Disk) SetConfig(cfg DiskConfig) { d.cfg = cfg }

// Stats returns the counters so far.
func (d *Disk) Stats() DiskStats { return d.stats }

// Create creates an empty file, replacing any file of that name. The entry is journaled.
func (d *Disk) Create(name string) error {
	d.stats.Ops[disk.KindCreate]++
	if err := checkName(name); err != nil {
		return fmt.Errorf("sim: create %q: %w", name, err)
	}
	if err := d.eio(disk.KindCreate, name); err != nil {
		return err
	}
	dn, base := path.Split(name)
	dr := d.dir(cleanDir(dn))
	ino := &inode{}
	dr.cur[base] = ino
	dr.journal = append(dr.journal, dirOp{kind: opCreate, name: base, ino: ino})
	return nil
}

// WriteAt writes data at off of an existing file; see the Disk documentation.
func (d *Disk) WriteAt(name string, off int64, data []byte) error {
	d.stats.Ops[disk.KindWriteAt]++
	ino, err := d.lookup("write", name)
	if err != nil {
		return err
	}
	if off < 0 {
		return fmt.Errorf("sim: write %q at %d: %w", name, off, ErrInvalid)
	}
	if len(data) == 0 {
		return nil
	}
	if off > MaxFileSize-int64(len(data)) {
		return fmt.Errorf("sim: write %q at %d: %w", name, off, ErrFileTooLarge)
	}
	o := int(off)
	if err := d.eio(disk.KindWriteAt, name); err != nil {
		return err
	}
	if err := d.reserve(name, ino, o+len(data)); err != nil {
		return err
	}
	if d.faults && d.fr.Chance(d.cfg.NoSpaceProb) {
		d.stats.NoSpaceInjected++
		return fmt.Errorf("sim: write %q: injected: %w", name, disk.ErrNoSpace)
	}
	stored := d.corruptWrite(ino, o, data)
	ino.forgetMeant(o, o+len(data))
	if !bytes.Equal(stored, data) {
		d.noteDamage(name)
		ino.meant = append(ino.meant, meantWrite{off: o, data: slices.Clone(data), stored: stored})
	}
	ino.write(o, data)
	d.stats.BytesWritten += uint64(len(data))
	return nil
}

// corruptWrite returns what a write of data at off stores on the device: data itself,
// or, with WriteCorruptProb, a copy with one bit flipped or the bytes the range already
// held; with MisdirectProb the range keeps its bytes and data lands elsewhere.
func (d *Disk) corruptWrite(ino *inode, off int, data []byte) []byte {
	if d.faults && d.fr.Chance(d.cfg.MisdirectProb) {
		old := ino.writeback(off, off+len(data))
		d.misdirect(data)
		return growZero(old, len(data))
	}
	if !d.faults || !d.fr.Chance(d.cfg.WriteCorruptProb) {
		return data
	}
	if d.fr.Chance(0.5) {
		d.stats.WritesCorrupted++
		b := slices.Clone(data)
		flipBit(b, d.fr)
		return b
	}
	d.stats.WritesLost++
	return growZero(ino.writeback(off, off+len(data)), len(data))
}

// reserve checks that growing ino to size bytes fits CapacityBytes.
func (d *Disk) reserve(name string, ino *inode, size int) error {
	grow := int64(size - len(ino.cur))
	if grow <= 0 {
		return nil
	}
	if d.full(grow) {
		d.stats.NoSpaceFull++
		return fmt.Errorf("sim: %q to %d bytes: device filled up: %w", name, size, disk.ErrNoSpace)
	}
	if d.cfg.CapacityBytes <= 0 || d.used()+grow <= d.cfg.CapacityBytes {
		return nil
	}
	d.stats.NoSpaceFull++
	return fmt.Errorf("sim: %q to %d bytes: device full: %w", name, size, disk.ErrNoSpace)
}

// used is the sum of the current sizes of the visible files. (A sum does not depend on
// the map iteration order.)
func (d *Disk) used() int64 {
	var n int64
	for _, dr := range d.dirs { //narad:unordered
		for _, ino := range dr.cur { //narad:unordered
			n += int64(len(ino.cur))
		}
	}
	return n
}

// ReadAt reads up to n bytes at off from the page cache; see the Disk documentation.
func (d *Disk) ReadAt(name string, off int64, n int) ([]byte, error) {
	return d.read("read", name, off, n, false)
}

// ReadDevice reads up to n bytes at off from the device, bypassing the page cache: what
// a successful Sync would make durable (dirty bytes as writeback stores them, the rest as
// the device holds it). The file's size is the cache's.
func (d *Disk) ReadDevice(name string, off int64, n int) ([]byte, error) {
	return d.read("read-device", name, off, n, true)
}

func (d *Disk) read(op, name string, off int64, n int, device bool) ([]byte, error) {
	d.stats.Ops[disk.KindReadAt]++
	if device {
		d.stats.DeviceReads++
	}
	ino, err := d.lookup(op, name)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("sim: %s %q at %d+%d: %w", op, name, off, n, ErrInvalid)
	}
	if d.faults && d.fr.Chance(d.cfg.ReadErrorProb) {
		d.stats.ReadErrors++
		return nil, fmt.Errorf("sim: %s %q at %d: injected: %w", op, name, off, disk.ErrIO)
	}
	out := []byte{}
	if off < int64(len(ino.cur)) {
		o := int(off)
		hi := o + min(n, len(ino.cur)-o)
		if device {
			out = ino.device(o, hi)
		} else {
			out = slices.Clone(ino.cur[o:hi])
		}
	}
	if len(out) > 0 && d.faults && d.fr.Chance(d.cfg.ReadCorruptProb) {
		d.stats.ReadsCorrupted++
		view := slices.Clone(out)
		bit := flipBit(out, d.fr)
		for ino.masks(out, view, int(off)) { // never the one flip that undoes a corrupted write
			flipAt(out, bit)
			bit = (bit + 1) % (len(out) * 8)
			flipAt(out, bit)
		}
	}
	d.stats.BytesRead += uint64(len(out))
	return out, nil
}

// Sync is fdatasync; see the Disk documentation for success and failure.
func (d *Disk) Sync(name string) error {
	d.stats.Ops[disk.KindSync]++
	ino, err := d.lookup("sync", name)
	if err != nil {
		return err
	}
	if d.faults && d.fr.Chance(d.cfg.SyncFailProb) {
		d.stats.SyncsFailed++
		img, fc := ino.image(d.fr, true, 0.5, 0, 0)
		d.stats.SyncPagesLost += uint64(fc.dropped)
		if fc.dropped > 0 {
			d.noteDamage(name)
		}
		ino.durable, ino.dirty, ino.sized = img, nil, false
		return fmt.Errorf("sim: sync %q: injected: %w", name, disk.ErrIO)
	}
	ino.sync()
	if d.rot(ino) {
		d.noteDamage(name)
	}
	return nil
}

// Truncate sets the size of an existing file; see the Disk documentation.
func (d *Disk) Truncate(name string, size int64) error {
	d.stats.Ops[disk.KindTruncate]++
	ino, err := d.lookup("truncate", name)
	if err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("sim: truncate %q to %d: %w", name, size, ErrInvalid)
	}
	if size > MaxFileSize {
		return fmt.Errorf("sim: truncate %q to %d: %w", name, size, ErrFileTooLarge)
	}
	if err := d.eio(disk.KindTruncate, name); err != nil {
		return err
	}
	if err := d.reserve(name, ino, int(size)); err != nil {
		return err
	}
	ino.truncate(int(size))
	d.freed()
	return nil
}

// Rename renames from to to (same directory), replacing to. The change is journaled.
func (d *Disk) Rename(from, to string) error {
	d.stats.Ops[disk.KindRename]++
	ino, err := d.lookup("rename", from)
	if err != nil {
		return err
	}
	if err := checkName(to); err != nil {
		return fmt.Errorf("sim: rename %q to %q: %w", from, to, err)
	}
	fromDir, fromBase := path.Split(from)
	toDir, toBase := path.Split(to)
	if fromDir != toDir {
		return fmt.Errorf("sim: rename %q to %q: %w", from, to, ErrCrossDir)
	}
	if from == to {
		return nil
	}
	if err := d.eio(disk.KindRename, from); err != nil {
		return err
	}
	dr := d.dirs[cleanDir(fromDir)]
	dr.cur[toBase] = ino
	delete(dr.cur, fromBase)
	dr.journal = append(dr.journal, dirOp{kind: opRename, name: fromBase, to: toBase})
	return nil
}

// Remove removes a file. The change is journaled.
func (d *Disk) Remove(name string) error {
	d.stats.Ops[disk.KindRemove]++
	if _, err := d.lookup("remove", name); err != nil {
		return err
	}
	if err := d.eio(disk.KindRemove, name); err != nil {
		return err
	}
	dn, base := path.Split(name)
	dr := d.dirs[cleanDir(dn)]
	delete(dr.cur, base)
	dr.journal = append(dr.journal, dirOp{kind: opRemove, name: base})
	d.freed()
	return nil
}

// List returns the sorted names of the files directly in dirName ("" or "." is the root).
func (d *Disk) List(dirName string) ([]string, error) {
	d.stats.Ops[disk.KindList]++
	dn, err := checkDir(dirName)
	if err != nil {
		return nil, fmt.Errorf("sim: list %q: %w", dirName, err)
	}
	names := []string{}
	if dr := d.dirs[dn]; dr != nil {
		names = append(names, slices.Sorted(maps.Keys(dr.cur))...)
	}
	return names, nil
}

// SyncDir makes the entries of dirName durable: its whole journal.
func (d *Disk) SyncDir(dirName string) error {
	d.stats.Ops[disk.KindSyncDir]++
	dn, err := checkDir(dirName)
	if err != nil {
		return fmt.Errorf("sim: syncdir %q: %w", dirName, err)
	}
	if err := d.eio(disk.KindSyncDir, dn); err != nil {
		return err
	}
	if dr := d.dirs[dn]; dr != nil {
		dr.durable = cloneEntries(dr.cur)
		dr.journal = nil
		d.tidy(dn)
	}
	return nil
}

// lookup finds the visible inode of name.
func (d *Disk) lookup(op, name string) (*inode, error) {
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("sim: %s %q: %w", op, name, err)
	}
	dn, base := path.Split(name)
	if dr := d.dirs[cleanDir(dn)]; dr != nil {
		if ino := dr.cur[base]; ino != nil {
			return ino, nil
		}
	}
	return nil, fmt.Errorf("sim: %s %q: %w", op, name, disk.ErrNotExist)
}

// ListDirs returns the sorted names of the directories directly in dirName: a directory
// exists while it holds an entry, visible, durable or pending (the simulator has no
// empty directories: one is gone once its removals are durable).
func (d *Disk) ListDirs(dirName string) ([]string, error) {
	d.stats.Ops[disk.KindListDirs]++
	dn, err := checkDir(dirName)
	if err != nil {
		return nil, fmt.Errorf("sim: listdirs %q: %w", dirName, err)
	}
	seen := map[string]bool{}
	for key := range d.dirs { //narad:unordered (sorted below)
		if child, ok := childOf(dn, key); ok {
			seen[child] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// RemoveDir removes directory dirName, which must hold no file and no directory. Its
// durable entries (removals not yet synced) keep it on the device: it goes when they do.
func (d *Disk) RemoveDir(dirName string) error {
	d.stats.Ops[disk.KindRemoveDir]++
	dn, err := checkDir(dirName)
	if err != nil || dn == "." {
		return fmt.Errorf("sim: removedir %q: %w", dirName, ErrInvalid)
	}
	sub, _ := d.ListDirs(dn)
	d.stats.Ops[disk.KindListDirs]--
	dr := d.dirs[dn]
	switch {
	case dr == nil && len(sub) == 0:
		return fmt.Errorf("sim: removedir %q: %w", dirName, disk.ErrNotExist)
	case len(sub) > 0 || dr != nil && len(dr.cur) > 0:
		return fmt.Errorf("sim: removedir %q: %w", dirName, disk.ErrNotEmpty)
	}
	if err := d.eio(disk.KindRemoveDir, dn); err != nil {
		return err
	}
	if len(dr.durable) == 0 {
		delete(d.dirs, dn)
	}
	return nil
}

// childOf is the first element of key below directory dn, if key is below it.
func childOf(dn, key string) (string, bool) {
	rest := key
	if dn != "." {
		var ok bool
		if rest, ok = strings.CutPrefix(key, dn+"/"); !ok {
			return "", false
		}
	} else if key == "." {
		return "", false
	}
	child, _, _ := strings.Cut(rest, "/")
	return child, true
}

// dir returns directory dn, creating it if missing.
func (d *Disk) dir(dn string) *dir {
	dr := d.dirs[dn]
	if dr == nil {
		dr = &dir{cur: map[string]*inode{}, durable: map[string]*inode{}}
		d.dirs[dn] = dr
	}
	return dr
}

// tidy forgets directory dn if it holds nothing, visible, durable or pending.
func (d *Disk) tidy(dn string) {
	if dr := d.dirs[dn]; dr != nil && len(dr.cur) == 0 && len(dr.durable) == 0 && len(dr.journal) == 0 {
		delete(d.dirs, dn)
	}
}

func cloneEntries(m map[string]*inode) map[string]*inode {
	out := make(map[string]*inode, len(m))
	maps.Copy(out, m)
	return out
}

// checkName accepts clean relative slash-separated file names.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.HasPrefix(name, "/") ||
		strings.HasPrefix(name, "../") || path.Clean(name) != name {
		return ErrInvalid
	}
	return nil
}

// checkDir accepts a directory name and returns its canonical form ("." for the root).
func checkDir(dn string) (string, error) {
	if dn == "" || dn == "." {
		return ".", nil
	}
	return dn, checkName(dn)
}

// cleanDir turns the directory part of path.Split into a directory name.
func cleanDir(dn string) string {
	if dn == "" {
		return "."
	}
	return strings.TrimSuffix(dn, "/")
}
