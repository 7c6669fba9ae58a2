package sim

import (
	"bytes"
	"errors"
	"math/bits"
	"testing"

	"github.com/narad/narad/core/disk"
)

// onesDiff counts the bits in which a and b (of equal length) differ.
func onesDiff(a, b []byte) int {
	n := 0
	for i := range a {
		n += bits.OnesCount8(a[i] ^ b[i])
	}
	return n
}

// A silently corrupted write shows in the device read and after a machine crash, never
// in the cached read while the cache holds the page.
func TestPageCacheHidesCorruption(t *testing.T) {
	d := newDisk(3, DiskConfig{WriteCorruptProb: 1})
	durableFile(t, d, "f", fill(100, 1))
	nw := randBytes(3, 100)
	must(t, d.WriteAt("f", 0, nw))
	must(t, d.Sync("f"))
	if got := contents(t, d, "f"); !bytes.Equal(got, nw) {
		t.Fatal("the cached read does not return what was written")
	}
	dev := deviceContents(t, d, "f")
	if bytes.Equal(dev, nw) {
		t.Fatal("the device read shows the corrupted write as written")
	}
	d.Crash()
	if got := contents(t, d, "f"); !bytes.Equal(got, dev) {
		t.Fatal("after a machine crash the cache does not hold what the device held")
	}
}

// A failed sync loses pages on the device while the cache still shows them; only the
// device read sees the loss (the retried-fsync bug is visible to a device read-back).
func TestFailedSyncVisibleOnlyOnDevice(t *testing.T) {
	d := newDisk(5, DiskConfig{SyncFailProb: 1})
	must(t, d.Create("f"))
	nw := randBytes(5, 8*PageSize)
	must(t, d.WriteAt("f", 0, nw))
	if err := d.Sync("f"); !errors.Is(err, disk.ErrIO) {
		t.Fatalf("sync: %v", err)
	}
	d.SetFaults(false)
	must(t, d.Sync("f")) // the retried sync "succeeds"
	if !bytes.Equal(contents(t, d, "f"), nw) {
		t.Fatal("the cache lost bytes")
	}
	if d.Stats().SyncPagesLost == 0 || bytes.Equal(deviceContents(t, d, "f"), nw) {
		t.Fatalf("the device read does not show the %d lost pages", d.Stats().SyncPagesLost)
	}
}

// Each op kind with an EIO probability fails with disk.ErrIO and changes nothing.
func TestEIOPerKind(t *testing.T) {
	for _, k := range []disk.Kind{disk.KindCreate, disk.KindWriteAt, disk.KindTruncate, disk.KindRename, disk.KindRemove, disk.KindSyncDir} {
		var cfg DiskConfig
		cfg.EIOProb[k] = 1
		d := newDisk(1, cfg)
		durableFile(t, d, "w/f", []byte("abc"))
		var err error
		switch k {
		case disk.KindCreate:
			err = d.Create("w/g")
		case disk.KindWriteAt:
			err = d.WriteAt("w/f", 0, []byte("x"))
		case disk.KindTruncate:
			err = d.Truncate("w/f", 1)
		case disk.KindRename:
			err = d.Rename("w/f", "w/g")
		case disk.KindRemove:
			err = d.Remove("w/f")
		case disk.KindSyncDir:
			d.SetFaults(false)
			must(t, d.Create("w/g"))
			d.SetFaults(true)
			err = d.SyncDir("w")
		}
		if !errors.Is(err, disk.ErrIO) || d.Stats().EIOs[k] != 1 {
			t.Fatalf("%s: err %v, EIOs %v", k, err, d.Stats().EIOs)
		}
		names, _ := d.List("w")
		want := "[f]"
		if k == disk.KindSyncDir {
			want = "[f g]"
			if _, ok := d.DurableFiles()["w/g"]; ok {
				t.Fatal("a failed SyncDir made its entry durable")
			}
		}
		if got := string(contents(t, d, "w/f")); got != "abc" || bracket(names) != want {
			t.Fatalf("%s changed the disk: %q %v", k, got, names)
		}
	}
}

func bracket(names []string) string {
	b := []byte("[")
	for i, n := range names {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, n...)
	}
	return string(append(b, ']'))
}

// A full device refuses every growth until space is freed, not one op at a time.
func TestFullUntilFreed(t *testing.T) {
	d := newDisk(1, DiskConfig{FillProb: 1})
	must(t, d.Create("a"))
	must(t, d.Create("b"))
	if err := d.WriteAt("a", 0, fill(10, 1)); !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("first growth: %v", err)
	}
	d.cfg.FillProb = 0
	for i := range 5 {
		if err := d.WriteAt("b", int64(i), []byte("x")); !errors.Is(err, disk.ErrNoSpace) {
			t.Fatalf("growth %d while full: %v", i, err)
		}
	}
	must(t, d.Truncate("a", 0)) // frees nothing: a is empty
	if err := d.WriteAt("b", 0, []byte("x")); !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("growth after freeing nothing: %v", err)
	}
	if d.Stats().Fills != 1 {
		t.Fatalf("fills %d", d.Stats().Fills)
	}
	d2 := newDisk(2, DiskConfig{})
	must(t, d2.Create("a"))
	must(t, d2.WriteAt("a", 0, fill(100, 1)))
	d2.cfg.FillProb = 1
	must(t, d2.Create("b"))
	if err := d2.WriteAt("b", 0, []byte("x")); !errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("growth: %v", err)
	}
	d2.cfg.FillProb = 0
	must(t, d2.WriteAt("a", 0, fill(100, 2))) // an overwrite does not grow
	must(t, d2.Remove("a"))                   // frees 100 bytes
	must(t, d2.WriteAt("b", 0, fill(50, 3)))
}

// A full device stays full across FullKillsMax-1 Kills of its process and is freed by
// the operator at the FullKillsMax-th; with FullKillsMax 0 it stays full.
func TestFullFreedAfterKills(t *testing.T) {
	for _, max := range []int{0, 3} {
		d := newDisk(3, DiskConfig{FillProb: 1, FullKillsMax: max, ProcessProb: 1})
		must(t, d.Create("a"))
		if err := d.WriteAt("a", 0, []byte("x")); !errors.Is(err, disk.ErrNoSpace) {
			t.Fatalf("max %d: first growth: %v", max, err)
		}
		d.cfg.FillProb = 0
		for kill := 1; kill <= 5; kill++ {
			d.Kill()
			err := d.WriteAt("a", 0, []byte("x"))
			if free := max > 0 && kill >= max; free != (err == nil) {
				t.Fatalf("max %d, after kill %d: growth gave %v", max, kill, err)
			}
		}
		if want := uint64(min(max, 1)); d.Stats().FillsFreed != want {
			t.Fatalf("max %d: fills freed %d, want %d", max, d.Stats().FillsFreed, want)
		}
	}
}

// A misdirected write leaves its own range unchanged on the device and lands on another
// file's dirty bytes, which that file's cache does not show.
func TestMisdirectedWrite(t *testing.T) {
	d := newDisk(9, DiskConfig{})
	durableFile(t, d, "a", fill(64, 'a'))
	durableFile(t, d, "b", fill(64, 'b'))
	must(t, d.WriteAt("b", 0, fill(64, 'B'))) // dirty: where the misdirected bytes can land
	d.cfg.MisdirectProb = 1
	must(t, d.WriteAt("a", 0, fill(64, 'X')))
	d.cfg.MisdirectProb = 0
	must(t, d.Sync("a"))
	must(t, d.Sync("b"))
	if !bytes.Equal(contents(t, d, "a"), fill(64, 'X')) || !bytes.Equal(contents(t, d, "b"), fill(64, 'B')) {
		t.Fatal("the caches do not hold what was written")
	}
	if !bytes.Equal(deviceContents(t, d, "a"), fill(64, 'a')) {
		t.Fatalf("a's device range changed: %q", deviceContents(t, d, "a"))
	}
	if !bytes.Contains(deviceContents(t, d, "b"), []byte("X")) {
		t.Fatalf("the misdirected bytes did not land on b: %q", deviceContents(t, d, "b"))
	}
	if st := d.Stats(); st.WritesMisdirect != 1 || st.MisdirectLanded != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Bit rot changes durable bytes after their sync; the cache keeps the good copy until a
// machine crash drops it.
func TestBitRotAtRest(t *testing.T) {
	d := newDisk(4, DiskConfig{})
	durableFile(t, d, "f", fill(100, 7))
	d.cfg.RotProb = 1
	must(t, d.WriteAt("f", 100, fill(10, 8)))
	must(t, d.Sync("f"))
	d.cfg.RotProb = 0
	want := append(fill(100, 7), fill(10, 8)...)
	if !bytes.Equal(contents(t, d, "f"), want) {
		t.Fatal("rot reached the cache")
	}
	if diff := onesDiff(deviceContents(t, d, "f"), want); diff != 1 || d.Stats().Rots != 1 {
		t.Fatalf("device differs in %d bits, rots %d", diff, d.Stats().Rots)
	}
	d.Crash()
	if diff := onesDiff(contents(t, d, "f"), want); diff != 1 {
		t.Fatalf("after a crash the file differs in %d bits, want the rotten one", diff)
	}
}

// RotAt flips one bit of the durable byte asked for, counts the directory damaged, and
// leaves dirty bytes, bytes past the durable end and unknown names alone.
func TestRotAtPlacesRot(t *testing.T) {
	d := newDisk(5, DiskConfig{})
	durableFile(t, d, "w/f", fill(100, 7))
	must(t, d.WriteAt("w/f", 90, fill(20, 8)))
	if d.RotAt("w/f", 95) || d.RotAt("w/f", 100) || d.RotAt("w/g", 1) || d.RotAt("w/f", -1) {
		t.Fatal("rotted a dirty byte, a byte past the durable end or a missing file")
	}
	if !d.RotAt("w/f", 40) || d.Stats().Rots != 1 || d.Damage("w") != 1 {
		t.Fatalf("rots %d damage %d", d.Stats().Rots, d.Damage("w"))
	}
	got := deviceContents(t, d, "w/f")
	if diff := onesDiff(got[:90], fill(100, 7)[:90]); diff != 1 || got[40] == fill(100, 7)[40] {
		t.Fatalf("device differs in %d bits, byte 40 %x", diff, got[40])
	}
}

// A process crash keeps the page cache and the pending directory journal: unsynced
// writes still read back, and a later machine crash decides them.
func TestProcessCrashKeepsCache(t *testing.T) {
	d := newDisk(2, DiskConfig{ProcessProb: 1, CrashKeepProb: 0})
	durableFile(t, d, "w/f", fill(10, 1))
	must(t, d.WriteAt("w/f", 10, fill(10, 2)))
	must(t, d.Create("w/g"))
	if !d.Kill() {
		t.Fatal("Kill chose a machine crash")
	}
	if got := contents(t, d, "w/f"); len(got) != 20 {
		t.Fatalf("the process crash lost the cache: %d bytes", len(got))
	}
	if names, _ := d.List("w"); bracket(names) != "[f g]" {
		t.Fatalf("entries %v", names)
	}
	d.cfg.ProcessProb = 0
	if d.Kill() {
		t.Fatal("Kill chose a process crash")
	}
	if got := contents(t, d, "w/f"); len(got) != 10 {
		t.Fatalf("the machine crash kept %d bytes, want the 10 synced", len(got))
	}
	if st := d.Stats(); st.ProcessCrashes != 1 || st.Crashes != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Writes in flight at a crash land in the cache or not.
func TestLandInFlight(t *testing.T) {
	d := newDisk(2, DiskConfig{LandProb: 1})
	must(t, d.Create("f"))
	ops := []disk.Op{{Kind: disk.KindWriteAt, Name: "f", Data: []byte("ab")}, {Kind: disk.KindSync, Name: "f"}, {Kind: disk.KindWriteAt, Name: "f", Off: 2, Data: []byte("cd")}}
	if n := d.Land(ops); n != 2 || string(contents(t, d, "f")) != "abcd" {
		t.Fatalf("landed %d: %q", n, contents(t, d, "f"))
	}
	d.cfg.LandProb = 0
	if n := d.Land([]disk.Op{{Kind: disk.KindWriteAt, Name: "f", Data: []byte("zz")}}); n != 0 || string(contents(t, d, "f")) != "abcd" {
		t.Fatalf("a dropped write landed")
	}
	if st := d.Stats(); st.InFlightLanded != 2 || st.InFlightDropped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Damage counts, per directory, the silent damage to device bytes: a misdirected write
// counts for the directory written and for the one whose dirty bytes it landed on, and
// a fault the caller sees (EIO) counts for nothing.
func TestDamagePerDirectory(t *testing.T) {
	d := newDisk(7, DiskConfig{})
	must(t, d.Create("a/f"))
	must(t, d.Create("b/g"))
	must(t, d.WriteAt("b/g", 0, fill(100, 2))) // dirty: the only place a misdirect can land
	d.SetConfig(DiskConfig{MisdirectProb: 1})
	must(t, d.WriteAt("a/f", 0, fill(50, 3)))
	if d.Damage("a") != 1 || d.Damage("b") != 1 || d.Damage("c") != 0 {
		t.Fatalf("after a misdirect from a to b: damage a=%d b=%d c=%d", d.Damage("a"), d.Damage("b"), d.Damage("c"))
	}
	var eio DiskConfig
	eio.EIOProb[disk.KindWriteAt] = 1
	d.SetConfig(eio)
	if err := d.WriteAt("a/f", 0, fill(50, 4)); !errors.Is(err, disk.ErrIO) {
		t.Fatalf("write: %v", err)
	}
	if d.Damage("a") != 1 {
		t.Fatalf("an EIO counted as damage: %d", d.Damage("a"))
	}
}

// A placed write corruption changes what the device gets of a dirty byte, not the cache:
// the sync makes the flipped bit durable, a cached read still shows the byte written. A
// clean byte is left alone.
func TestCorruptDirtyAt(t *testing.T) {
	d := newDisk(9, DiskConfig{})
	durableFile(t, d, "a", fill(64, 'a'))
	if d.CorruptDirtyAt("a", 3) {
		t.Fatal("a clean byte was corrupted")
	}
	must(t, d.WriteAt("a", 64, fill(16, 'b')))
	if !d.CorruptDirtyAt("a", 70) {
		t.Fatal("a dirty byte was not corrupted")
	}
	must(t, d.Sync("a"))
	if !bytes.Equal(contents(t, d, "a"), append(fill(64, 'a'), fill(16, 'b')...)) {
		t.Fatalf("the cache changed: %q", contents(t, d, "a"))
	}
	dev := deviceContents(t, d, "a")
	for i, c := range dev {
		if want := byte(map[bool]byte{true: 'a', false: 'b'}[i < 64]); (c != want) != (i == 70) {
			t.Fatalf("device byte %d is %q: %q", i, c, dev)
		}
	}
	if st := d.Stats(); st.WritesCorrupted != 1 || d.Damage("") != 1 {
		t.Fatalf("stats %+v, damage %d", st, d.Damage(""))
	}
}
