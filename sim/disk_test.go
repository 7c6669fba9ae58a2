package sim

import (
	"bytes"
	"errors"
	"math/bits"
	"slices"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
)

func newDisk(seed uint64, cfg DiskConfig) *Disk { return NewDisk(rng.New(seed), cfg) }

// tb is what must needs of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
}

func must(t tb, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fill returns n bytes of value b.
func fill(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// randBytes returns n bytes drawn from a generator seeded with seed.
func randBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	_, _ = rng.New(seed).Read(b)
	return b
}

// contents reads the whole visible file with faults off.
func contents(t testing.TB, d *Disk, name string) []byte {
	t.Helper()
	on := d.faults
	d.SetFaults(false)
	defer d.SetFaults(on)
	b, err := d.ReadAt(name, 0, MaxFileSize)
	must(t, err)
	return b
}

// deviceContents reads the whole file from the device with faults off.
func deviceContents(t testing.TB, d *Disk, name string) []byte {
	t.Helper()
	on := d.faults
	d.SetFaults(false)
	defer d.SetFaults(on)
	b, err := d.ReadDevice(name, 0, MaxFileSize)
	must(t, err)
	return b
}

// durableFile creates name with data, syncs it and its directory.
func durableFile(t testing.TB, d *Disk, name string, data []byte) {
	t.Helper()
	on := d.faults
	d.SetFaults(false)
	defer d.SetFaults(on)
	must(t, d.Create(name))
	must(t, d.WriteAt(name, 0, data))
	must(t, d.Sync(name))
	must(t, d.SyncDir(dirOf(name)))
}

func dirOf(name string) string {
	if i := bytes.LastIndexByte([]byte(name), '/'); i >= 0 {
		return name[:i]
	}
	return "."
}

func TestUnsyncedWriteDroppedOnCrash(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		d := newDisk(seed, DiskConfig{}) // keep = tear = 0: every dirty page is dropped
		old := fill(10000, 1)
		durableFile(t, d, "wal/a", old)
		must(t, d.WriteAt("wal/a", 5000, fill(8000, 2))) // overwrite and extend
		must(t, d.WriteAt("wal/a", 20000, fill(100, 3))) // past a gap
		d.Crash()
		if got := contents(t, d, "wal/a"); !bytes.Equal(got, old) {
			t.Fatalf("seed %d: after crash len %d, want the synced %d bytes", seed, len(got), len(old))
		}
		if st := d.Stats(); st.PagesDropped == 0 || st.PagesKept+st.PagesTorn != 0 {
			t.Fatalf("seed %d: stats %+v", seed, st)
		}
	}
}

func TestSyncedWriteSurvivesCrash(t *testing.T) {
	cfg := DiskConfig{CrashKeepProb: 0.3, CrashTearProb: 0.4, CrashGarbageProb: 0.5}
	for seed := uint64(1); seed <= 50; seed++ {
		d := newDisk(seed, cfg)
		synced := randBytes(seed, 3*PageSize+700)
		durableFile(t, d, "wal/a", synced)
		must(t, d.WriteAt("wal/a", int64(len(synced)), randBytes(seed+1000, 2*PageSize))) // unsynced append
		must(t, d.Create("wal/b"))                                                        // unsynced entry
		d.Crash()
		got := contents(t, d, "wal/a")
		if len(got) < len(synced) || !bytes.Equal(got[:len(synced)], synced) {
			t.Fatalf("seed %d: synced bytes damaged by the crash", seed)
		}
		if df := d.DurableFiles(); !bytes.Equal(df["wal/a"], got) {
			t.Fatalf("seed %d: after a crash the durable image differs from the visible one", seed)
		}
	}
}

func TestFailedSyncLosesPagesForever(t *testing.T) {
	const pages = 8
	d := newDisk(1, DiskConfig{SyncFailProb: 1, CrashKeepProb: 1})
	old := fill(4*PageSize, 1) // durable; the new data overwrites it and extends past it
	durableFile(t, d, "f", old)
	nw := fill(pages*PageSize, 2)
	must(t, d.WriteAt("f", 0, nw))
	if err := d.Sync("f"); !errors.Is(err, disk.ErrIO) {
		t.Fatalf("sync: %v, want ErrIO", err)
	}
	lost := d.Stats().SyncPagesLost
	if lost == 0 || lost == pages {
		t.Fatalf("seed 1 lost %d of %d pages; pick a seed that loses some, not all", lost, pages)
	}
	d.SetFaults(false)
	must(t, d.Sync("f")) // the retry succeeds ...
	if got := contents(t, d, "f"); !bytes.Equal(got, nw) {
		t.Fatal("the page cache should still show the new bytes")
	}
	check := func(img []byte, when string) {
		t.Helper()
		if len(img) != len(nw) {
			t.Fatalf("%s: len %d, want %d", when, len(img), len(nw))
		}
		var stale uint64
		for p := range pages {
			page := img[p*PageSize : (p+1)*PageSize]
			oldPage := make([]byte, PageSize) // zeros past the old end
			if p < 4 {
				oldPage = old[p*PageSize : (p+1)*PageSize]
			}
			switch {
			case bytes.Equal(page, nw[:PageSize]):
			case bytes.Equal(page, oldPage):
				stale++
			default:
				t.Fatalf("%s: page %d is neither old nor new", when, p)
			}
		}
		if stale != lost {
			t.Fatalf("%s: %d stale pages, want the %d the failed sync lost", when, stale, lost)
		}
	}
	check(d.DurableFiles()["f"], "durable after the retried sync") // ... but does not bring them back
	d.Crash()
	check(contents(t, d, "f"), "after a crash")
}

func TestTornPagesKeepCleanBytes(t *testing.T) {
	cfg := DiskConfig{CrashTearProb: 1, CrashGarbageProb: 0.3}
	writes := []span{{100, 150}, {5000, 5010}, {9000, 9600}, {4*PageSize - 10, 4*PageSize + 300}}
	var sawNew, sawOld, sawGarbage bool
	for seed := uint64(1); seed <= 40; seed++ {
		d := newDisk(seed, cfg)
		old := randBytes(seed, 4*PageSize)
		nw := randBytes(seed+1000, 5*PageSize)
		durableFile(t, d, "f", old)
		dirty := make([]bool, len(nw))
		for _, w := range writes {
			must(t, d.WriteAt("f", int64(w.lo), nw[w.lo:w.hi]))
			for i := w.lo; i < w.hi; i++ {
				dirty[i] = true
			}
		}
		d.Crash()
		got := contents(t, d, "f")
		if len(got) < len(old) || len(got) > 4*PageSize+300 {
			t.Fatalf("seed %d: len %d", seed, len(got))
		}
		for i, b := range got {
			switch {
			case !dirty[i] && i < len(old) && b != old[i]:
				t.Fatalf("seed %d: clean durable byte %d changed", seed, i)
			case !dirty[i] && i >= len(old):
				t.Fatalf("seed %d: byte %d never written but present", seed, i)
			case dirty[i] && b == nw[i]:
				sawNew = true
			case dirty[i] && i < len(old) && b == old[i]:
				sawOld = true
			case dirty[i]:
				sawGarbage = true
			}
		}
		if st := d.Stats(); st.PagesTorn != 5 {
			t.Fatalf("seed %d: %d pages torn, want 5", seed, st.PagesTorn)
		}
	}
	if !sawNew || !sawOld || !sawGarbage {
		t.Fatalf("torn sectors: new %v old %v garbage %v; want all three", sawNew, sawOld, sawGarbage)
	}
}

func TestGarbageOnlyInDirtyBytes(t *testing.T) {
	d := newDisk(7, DiskConfig{CrashTearProb: 1, CrashGarbageProb: 1})
	durableFile(t, d, "f", fill(2*PageSize, 0xAA))
	must(t, d.WriteAt("f", 600, fill(100, 0x55)))          // sector 1
	must(t, d.WriteAt("f", 4200, fill(800, 0x55)))         // sectors 8 and 9
	must(t, d.WriteAt("f", 2*PageSize+10, fill(20, 0x55))) // past the end: sector 16
	d.Crash()
	got := contents(t, d, "f")
	if len(got) != 2*PageSize+30 {
		t.Fatalf("len %d, want the garbage tail to extend the file to %d", len(got), 2*PageSize+30)
	}
	dirty := func(i int) bool {
		return (i >= 600 && i < 700) || (i >= 4200 && i < 5000) || i >= 2*PageSize+10
	}
	garbage := 0
	for i, b := range got {
		switch {
		case !dirty(i) && i < 2*PageSize && b != 0xAA:
			t.Fatalf("clean byte %d = %#x, want 0xaa", i, b)
		case !dirty(i) && i >= 2*PageSize && b != 0:
			t.Fatalf("gap byte %d = %#x, want 0", i, b)
		case dirty(i) && b != 0xAA && b != 0x55:
			garbage++
		}
	}
	if garbage < 800 {
		t.Fatalf("only %d garbage bytes among 920 dirty ones", garbage)
	}
	if st := d.Stats(); st.SectorsGarbage != 4 || st.PagesTorn != 3 {
		t.Fatalf("stats: %d garbage sectors (want 4), %d torn pages (want 3)", st.SectorsGarbage, st.PagesTorn)
	}
}

func TestUnsyncedCreateMayVanish(t *testing.T) {
	outcomes := map[int]bool{}
	for seed := uint64(1); seed <= 200 && len(outcomes) < 3; seed++ {
		d := newDisk(seed, DiskConfig{CrashKeepProb: 1})
		must(t, d.Create("d/x"))
		must(t, d.WriteAt("d/x", 0, []byte("x")))
		must(t, d.Sync("d/x")) // data durable, entry not
		must(t, d.Create("d/y"))
		d.Crash()
		names, err := d.List("d")
		must(t, err)
		switch {
		case len(names) == 0:
		case slices.Equal(names, []string{"x"}), slices.Equal(names, []string{"x", "y"}):
			if got := contents(t, d, "d/x"); string(got) != "x" {
				t.Fatalf("seed %d: d/x = %q", seed, got)
			}
		default:
			t.Fatalf("seed %d: entries %v are not a prefix of the journal", seed, names)
		}
		outcomes[len(names)] = true
	}
	if len(outcomes) != 3 {
		t.Fatalf("saw journal prefixes %v, want 0, 1 and 2 entries", outcomes)
	}
	d := newDisk(1, DiskConfig{})
	must(t, d.Create("d/x"))
	must(t, d.SyncDir("d"))
	d.Crash()
	if names, _ := d.List("d"); !slices.Equal(names, []string{"x"}) {
		t.Fatalf("synced create lost: %v", names)
	}
}

func TestRenameAtomicAcrossCrashes(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 200; seed++ {
		d := newDisk(seed, DiskConfig{})
		durableFile(t, d, "d/a", []byte("A"))
		durableFile(t, d, "d/b", []byte("B"))
		durableFile(t, d, "d/f", []byte("F"))
		must(t, d.Rename("d/a", "d/b")) // replaces b
		must(t, d.Rename("d/f", "d/g"))
		must(t, d.Rename("d/g", "d/h"))
		d.Crash()
		names, _ := d.List("d")
		df := d.DurableFiles()
		ab := string(df["d/a"]) + "," + string(df["d/b"])
		if ab != "A,B" && !(ab == ",A" && !slices.Contains(names, "a")) {
			t.Fatalf("seed %d: a,b = %q, want A,B (lost) or ,A (applied)", seed, ab)
		}
		var have []string
		for _, n := range []string{"f", "g", "h"} {
			if slices.Contains(names, n) {
				have = append(have, n)
				if c := contents(t, d, "d/"+n); string(c) != "F" {
					t.Fatalf("seed %d: d/%s = %q", seed, n, c)
				}
			}
		}
		if len(have) != 1 {
			t.Fatalf("seed %d: the renamed file is at %v, want exactly one name", seed, have)
		}
		seen[ab] = true
		seen[have[0]] = true
	}
	for _, o := range []string{"A,B", ",A", "f", "g", "h"} {
		if !seen[o] {
			t.Fatalf("outcome %q never seen (saw %v)", o, seen)
		}
	}
}

func TestRemoveUndoneByCrash(t *testing.T) {
	var kept, gone bool
	for seed := uint64(1); seed <= 100 && !(kept && gone); seed++ {
		d := newDisk(seed, DiskConfig{})
		durableFile(t, d, "d/a", []byte("data"))
		must(t, d.Remove("d/a"))
		if _, ok := d.DurableFiles()["d/a"]; !ok {
			t.Fatal("an unsynced remove changed the durable image")
		}
		d.Crash()
		names, _ := d.List("d")
		if len(names) == 1 {
			kept = true
			if got := contents(t, d, "d/a"); string(got) != "data" {
				t.Fatalf("seed %d: resurrected file holds %q", seed, got)
			}
		} else {
			gone = true
		}
	}
	if !kept || !gone {
		t.Fatalf("kept %v gone %v: want both", kept, gone)
	}
	d := newDisk(1, DiskConfig{})
	durableFile(t, d, "d/a", []byte("data"))
	must(t, d.Remove("d/a"))
	must(t, d.SyncDir("d"))
	d.Crash()
	if names, _ := d.List("d"); len(names) != 0 {
		t.Fatalf("synced remove undone: %v", names)
	}
}

func TestDurableFiles(t *testing.T) {
	d := newDisk(1, DiskConfig{})
	durableFile(t, d, "a", []byte("synced"))
	must(t, d.WriteAt("a", 6, []byte("+more"))) // unsynced data
	must(t, d.Create("w/b"))
	must(t, d.WriteAt("w/b", 0, []byte("b")))
	must(t, d.Sync("w/b")) // synced data, unsynced entry
	must(t, d.Truncate("a", 2))
	df := d.DurableFiles()
	if len(df) != 1 || string(df["a"]) != "synced" {
		t.Fatalf("durable image %q", df)
	}
	df["a"][0] = 'X' // a copy
	must(t, d.SyncDir("w"))
	must(t, d.Sync("a"))
	df = d.DurableFiles()
	if len(df) != 2 || string(df["a"]) != "sy" || string(df["w/b"]) != "b" {
		t.Fatalf("durable image after syncs %q", df)
	}
}

func TestTruncateCrash(t *testing.T) {
	var sizes = map[int]bool{}
	for seed := uint64(1); seed <= 100 && len(sizes) < 2; seed++ {
		d := newDisk(seed, DiskConfig{CrashKeepProb: 1})
		old := randBytes(seed, 10000)
		durableFile(t, d, "f", old)
		must(t, d.Truncate("f", 3000))
		must(t, d.Truncate("f", 5000)) // regrow: zeros from 3000
		if got := contents(t, d, "f"); !bytes.Equal(got[:3000], old[:3000]) || !bytes.Equal(got[3000:], make([]byte, 2000)) {
			t.Fatal("truncate regrow should read zeros")
		}
		d.Crash()
		got := contents(t, d, "f")
		switch {
		case bytes.Equal(got, old):
		case len(got) == 5000 && bytes.Equal(got[:3000], old[:3000]) && bytes.Equal(got[3000:], make([]byte, 2000)):
		default:
			t.Fatalf("seed %d: crash left %d bytes, neither the old nor the new size", seed, len(got))
		}
		sizes[len(got)] = true
	}
	if len(sizes) != 2 {
		t.Fatalf("saw sizes %v, want both", sizes)
	}
}

func TestCapacityNoSpace(t *testing.T) {
	d := newDisk(1, DiskConfig{CapacityBytes: 100})
	d.SetFaults(false) // capacity applies anyway
	must(t, d.Create("a"))
	must(t, d.WriteAt("a", 0, fill(60, 1)))
	if err := d.WriteAt("a", 60, fill(50, 2)); !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("write past capacity: %v", err)
	}
	if got := contents(t, d, "a"); !bytes.Equal(got, fill(60, 1)) {
		t.Fatal("a refused write changed the file")
	}
	must(t, d.WriteAt("a", 0, fill(60, 3))) // overwriting needs no space
	must(t, d.Create("b"))
	must(t, d.WriteAt("b", 0, fill(40, 4)))
	if err := d.WriteAt("b", 40, []byte{5}); !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("write on a full disk: %v", err)
	}
	if err := d.Truncate("b", 41); !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("truncate past capacity: %v", err)
	}
	must(t, d.Truncate("a", 10))
	must(t, d.WriteAt("b", 40, fill(50, 5)))
	must(t, d.Remove("b"))
	must(t, d.WriteAt("a", 10, fill(90, 6)))
	if st := d.Stats(); st.NoSpaceFull != 3 {
		t.Fatalf("NoSpaceFull %d, want 3", st.NoSpaceFull)
	}

	d = newDisk(1, DiskConfig{NoSpaceProb: 1})
	must(t, d.Create("a"))
	if err := d.WriteAt("a", 0, fill(10, 1)); !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("injected ENOSPC: %v", err)
	}
	if got := contents(t, d, "a"); len(got) != 0 {
		t.Fatal("a refused write changed the file")
	}
	d.SetFaults(false)
	must(t, d.WriteAt("a", 0, fill(10, 1)))
}

func TestReadFaultsDoNotChangeStoredBytes(t *testing.T) {
	data := randBytes(3, 3000)
	d := newDisk(1, DiskConfig{ReadErrorProb: 1})
	durableFile(t, d, "f", data)
	if b, err := d.ReadAt("f", 0, 100); !errors.Is(err, disk.ErrIO) || b != nil {
		t.Fatalf("read error: %v, %d bytes", err, len(b))
	}
	if !bytes.Equal(contents(t, d, "f"), data) || !bytes.Equal(d.DurableFiles()["f"], data) {
		t.Fatal("a read error changed the stored bytes")
	}

	d = newDisk(1, DiskConfig{ReadCorruptProb: 1})
	durableFile(t, d, "f", data)
	for i := range 20 {
		b, err := d.ReadAt("f", int64(i*100), 500)
		must(t, err)
		diff := 0
		for j := range b {
			diff += bits.OnesCount8(b[j] ^ data[i*100+j])
		}
		if diff != 1 {
			t.Fatalf("corrupted read differs in %d bits, want 1", diff)
		}
	}
	if !bytes.Equal(contents(t, d, "f"), data) || !bytes.Equal(d.DurableFiles()["f"], data) {
		t.Fatal("a corrupted read changed the stored bytes")
	}
	if st := d.Stats(); st.ReadsCorrupted != 20 {
		t.Fatalf("ReadsCorrupted %d", st.ReadsCorrupted)
	}
}

func TestWriteCorruption(t *testing.T) {
	var flipped, lost bool
	for seed := uint64(1); seed <= 50 && !(flipped && lost); seed++ {
		d := newDisk(seed, DiskConfig{WriteCorruptProb: 1})
		old := fill(1000, 1)
		durableFile(t, d, "f", old)
		nw := randBytes(seed, 1500)
		must(t, d.WriteAt("f", 0, nw)) // reported as a success
		if got := deviceContents(t, d, "f"); !bytes.Equal(d.DurableFiles()["f"], old) || len(got) != len(nw) {
			t.Fatal("an unsynced write reached the durable image")
		}
		must(t, d.Sync("f"))
		if !bytes.Equal(contents(t, d, "f"), nw) {
			t.Fatal("the page cache does not hold the bytes written")
		}
		got := deviceContents(t, d, "f")
		want := append(slices.Clone(old), make([]byte, 500)...)
		diff := 0
		for i := range got {
			diff += bits.OnesCount8(got[i] ^ nw[i])
		}
		switch st := d.Stats(); {
		case diff == 1 && st.WritesCorrupted == 1:
			flipped = true
		case bytes.Equal(got, want) && st.WritesLost == 1:
			lost = true
		default:
			t.Fatalf("seed %d: stored bytes differ from the write in %d bits; stats %+v", seed, diff, st)
		}
		if !bytes.Equal(d.DurableFiles()["f"], got) {
			t.Fatal("the corrupted bytes are what becomes durable")
		}
	}
	if !flipped || !lost {
		t.Fatalf("flipped %v lost %v: want both", flipped, lost)
	}
}

// A read fault never cancels a write fault: with every write corrupted and every read
// flipped, a read-back of a damaged range never shows the bytes the write meant to store
// (one write in 16 bits would otherwise read back intact about once in 16 reads).
func TestReadFaultNeverUndoesWriteCorruption(t *testing.T) {
	d := newDisk(7, DiskConfig{WriteCorruptProb: 1, ReadCorruptProb: 1})
	must(t, d.Create("f"))
	for i := range 2000 {
		meant := randBytes(uint64(i), 2)
		off := int64(i%7) * 2
		must(t, d.WriteAt("f", off, meant))
		b, err := d.ReadDevice("f", off, 2)
		must(t, err)
		stored := deviceContents(t, d, "f")[off : off+2]
		if !bytes.Equal(stored, meant) && bytes.Equal(b, meant) {
			t.Fatalf("write %d: the read fault undid the write's corruption", i)
		}
		diff := 0
		for j := range b {
			diff += bits.OnesCount8(b[j] ^ stored[j])
		}
		if diff != 1 {
			t.Fatalf("write %d: the corrupted read differs from the stored bytes in %d bits, want 1", i, diff)
		}
	}
}

// ListDirs sees the directories that hold an entry; RemoveDir takes an empty one, refuses
// one with a file, and a directory whose removals are durable is gone by itself.
func TestListDirsAndRemoveDir(t *testing.T) {
	d := NewDisk(rng.New(1), DiskConfig{})
	for _, p := range []string{"parts/a-0/seg", "parts/b-0/seg", "parts/x/y/seg", "parts/file"} {
		if err := d.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.ListDirs("parts")
	if err != nil || !slices.Equal(got, []string{"a-0", "b-0", "x"}) {
		t.Fatalf("ListDirs: %v %v", got, err)
	}
	if err := d.RemoveDir("parts/a-0"); !errors.Is(err, disk.ErrNotEmpty) {
		t.Fatalf("RemoveDir of a directory with a file: %v", err)
	}
	if err := d.RemoveDir("parts/x"); !errors.Is(err, disk.ErrNotEmpty) {
		t.Fatalf("RemoveDir of a directory with a directory: %v", err)
	}
	if err := d.Remove("parts/a-0/seg"); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveDir("parts/a-0"); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.ListDirs("parts"); !slices.Equal(got, []string{"b-0", "x"}) {
		t.Fatalf("after RemoveDir: %v", got)
	}
	if err := d.RemoveDir("parts/a-0"); !errors.Is(err, disk.ErrNotExist) {
		t.Fatalf("RemoveDir of a missing directory: %v", err)
	}
	if err := d.Remove("parts/b-0/seg"); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncDir("parts/b-0"); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.ListDirs("parts"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("an emptied, synced directory is still listed: %v", got)
	}
}
