package sim

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"testing"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/rng"
	"pgregory.net/rapid"
)

func TestErrors(t *testing.T) {
	d := newDisk(1, DiskConfig{})
	notExist := map[string]error{
		"write":    d.WriteAt("nope", 0, []byte("x")),
		"sync":     d.Sync("w/nope"),
		"truncate": d.Truncate("nope", 0),
		"rename":   d.Rename("nope", "other"),
		"remove":   d.Remove("nope"),
	}
	_, notExist["read"] = d.ReadAt("nope", 0, 1)
	for op, err := range notExist {
		if !errors.Is(err, disk.ErrNotExist) {
			t.Errorf("%s of a missing file: %v", op, err)
		}
	}
	must(t, d.Create("w/f"))
	invalid := map[string]error{
		"write at -1":      d.WriteAt("w/f", -1, []byte("x")),
		"truncate to -1":   d.Truncate("w/f", -1),
		"create /abs":      d.Create("/abs"),
		"create a//b":      d.Create("a//b"),
		"create ../x":      d.Create("../x"),
		"create empty":     d.Create(""),
		"rename to x/../y": d.Rename("w/f", "x/../y"),
	}
	_, invalid["read at -1"] = d.ReadAt("w/f", -1, 1)
	_, invalid["read -1 bytes"] = d.ReadAt("w/f", 0, -1)
	for op, err := range invalid {
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, disk.ErrIO) {
			t.Errorf("%s: %v, want ErrInvalid", op, err)
		}
	}
	if err := d.Rename("w/f", "v/f"); !errors.Is(err, ErrCrossDir) || !errors.Is(err, disk.ErrIO) {
		t.Errorf("cross-directory rename: %v", err)
	}
	if err := d.WriteAt("w/f", MaxFileSize, []byte("x")); !errors.Is(err, disk.ErrNoSpace) {
		t.Errorf("write past MaxFileSize: %v", err)
	}
	if names, err := d.List("missing"); err != nil || names == nil || len(names) != 0 {
		t.Errorf("list of a missing dir: %v, %v", names, err)
	}
	if b, err := d.ReadAt("w/f", 5, 10); err != nil || b == nil || len(b) != 0 {
		t.Errorf("read past EOF: %q, %v", b, err)
	}
	must(t, d.Rename("w/f", "w/f")) // a no-op
	must(t, d.SyncDir("missing"))
}

func TestBuffersAreCopied(t *testing.T) {
	d := newDisk(1, DiskConfig{})
	must(t, d.Create("f"))
	buf := []byte("hello world")
	must(t, d.WriteAt("f", 0, buf))
	buf[0] = 'J' // the caller reuses its buffer
	b, err := d.ReadAt("f", 0, 100)
	must(t, err)
	if string(b) != "hello world" {
		t.Fatalf("write kept the caller's buffer: %q", b)
	}
	b[0] = 'Y' // the caller keeps and edits what it read
	if got := contents(t, d, "f"); string(got) != "hello world" {
		t.Fatalf("read returned the stored bytes: %q", got)
	}
	if b, _ := d.ReadAt("f", 6, 3); string(b) != "wor" {
		t.Fatalf("short read %q", b)
	}
	must(t, d.WriteAt("f", 15, []byte("!")))
	if got := contents(t, d, "f"); string(got) != "hello world\x00\x00\x00\x00!" {
		t.Fatalf("gap not zero-filled: %q", got)
	}
}

// workload runs a scripted random sequence of ops, faults and crashes against a disk
// seeded with seed and returns a transcript of every result and the final durable image.
func workload(seed uint64) ([]string, map[string][]byte, DiskStats) {
	cfg := DiskConfig{
		CapacityBytes: 200_000, NoSpaceProb: 0.05, SyncFailProb: 0.1, ReadErrorProb: 0.1,
		ReadCorruptProb: 0.1, WriteCorruptProb: 0.1, CrashKeepProb: 0.3, CrashTearProb: 0.4,
		CrashGarbageProb: 0.3,
	}
	d := NewDisk(rng.New(seed), cfg)
	script := rng.New(seed ^ 0xabcdef)
	names := []string{"a", "b", "wal/1", "wal/2", "wal/3"}
	pick := func() string { return names[script.Intn(len(names))] }
	var out []string
	for i := range 400 {
		var res string
		switch script.Intn(10) {
		case 0:
			res = fmt.Sprint(d.Create(pick()))
		case 1, 2:
			data := make([]byte, script.Intn(3*PageSize))
			_, _ = script.Read(data)
			res = fmt.Sprint(d.WriteAt(pick(), int64(script.Intn(4*PageSize)), data))
		case 3:
			b, err := d.ReadAt(pick(), int64(script.Intn(4*PageSize)), script.Intn(2*PageSize))
			res = fmt.Sprintf("%x %v", b, err)
		case 4, 5:
			res = fmt.Sprint(d.Sync(pick()))
		case 6:
			res = fmt.Sprint(d.Truncate(pick(), int64(script.Intn(4*PageSize))))
		case 7:
			res = fmt.Sprint(d.Rename(pick(), pick()), d.Remove(pick()))
		case 8:
			l1, e1 := d.List(".")
			l2, e2 := d.List("wal")
			res = fmt.Sprint(l1, e1, l2, e2, d.SyncDir(path.Dir(pick())))
		default:
			if script.Chance(0.3) {
				d.Crash()
			}
			d.SetFaults(i < 300)
		}
		out = append(out, res)
	}
	return out, d.DurableFiles(), d.Stats()
}

func TestDeterminism(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		tr1, df1, st1 := workload(seed)
		tr2, df2, st2 := workload(seed)
		if !slices.Equal(tr1, tr2) || !reflect.DeepEqual(df1, df2) || st1 != st2 {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		if seed == 1 && (st1.Crashes == 0 || st1.SyncsFailed == 0 || st1.PagesTorn == 0) {
			t.Fatalf("the workload exercises too little: %+v", st1)
		}
	}
	tr1, _, _ := workload(1)
	tr2, _, _ := workload(2)
	if slices.Equal(tr1, tr2) {
		t.Fatal("different seeds gave the same run")
	}
}

// TestDiskMatchesReference checks that, with faults off, reads and lists behave like a
// plain map of name to bytes, and that after syncing everything a crash changes nothing.
func TestDiskMatchesReference(t *testing.T) {
	names := []string{"a", "b", "d/x", "d/y", "d/z", "d/e/f"}
	dirs := []string{".", "d", "d/e"}
	rapid.Check(t, func(t *rapid.T) {
		all := DiskConfig{
			NoSpaceProb: 0.5, SyncFailProb: 0.5, ReadErrorProb: 0.5, ReadCorruptProb: 0.5,
			WriteCorruptProb: 0.5, CrashTearProb: 0.5, CrashGarbageProb: 0.5,
		}
		d := NewDisk(rng.New(rapid.Uint64().Draw(t, "seed")), all)
		d.SetFaults(false)
		ref := map[string][]byte{}
		name := rapid.SampledFrom(names)
		for range rapid.IntRange(0, 60).Draw(t, "ops") {
			stepReference(t, d, ref, name, rapid.SampledFrom(dirs).Draw(t, "dir"))
		}
		for _, n := range slices.Sorted(maps.Keys(ref)) {
			must(t, d.Sync(n))
		}
		for _, dn := range dirs {
			must(t, d.SyncDir(dn))
		}
		if df := d.DurableFiles(); !reflect.DeepEqual(df, ref) {
			t.Fatalf("durable image %v, want %v", df, ref)
		}
		d.Crash()
		for _, n := range names {
			checkRead(t, d, ref, n, 0, 1<<20)
		}
	})
}

func stepReference(t *rapid.T, d *Disk, ref map[string][]byte, name *rapid.Generator[string], dn string) {
	n := name.Draw(t, "name")
	_, exists := ref[n]
	var err error
	switch op := rapid.IntRange(0, 8).Draw(t, "op"); op {
	case 0:
		err, ref[n], exists = d.Create(n), []byte{}, true
	case 1:
		off := rapid.IntRange(0, 3*PageSize).Draw(t, "off")
		data := rapid.SliceOfN(rapid.Byte(), 0, 2*PageSize).Draw(t, "data")
		err = d.WriteAt(n, int64(off), data)
		if exists && len(data) > 0 {
			ref[n] = put(ref[n], off, data)
		}
	case 2:
		checkRead(t, d, ref, n, rapid.IntRange(0, 4*PageSize).Draw(t, "off"), rapid.IntRange(0, 2*PageSize).Draw(t, "len"))
		return
	case 3:
		size := rapid.IntRange(0, 4*PageSize).Draw(t, "size")
		err = d.Truncate(n, int64(size))
		if exists {
			ref[n] = growZero(ref[n][:min(size, len(ref[n]))], size)
		}
	case 4:
		to := name.Draw(t, "to")
		err = d.Rename(n, to)
		if exists && path.Dir(n) != path.Dir(to) {
			if !errors.Is(err, ErrCrossDir) {
				t.Fatalf("cross-directory rename: %v", err)
			}
			return
		}
		if exists && n != to {
			ref[to] = ref[n]
			delete(ref, n)
		}
	case 5:
		err = d.Remove(n)
		delete(ref, n)
	case 6:
		err = d.Sync(n)
	case 7:
		err = d.SyncDir(dn)
		exists = true
	case 8:
		checkList(t, d, ref, dn)
		return
	}
	if exists != (err == nil) || (!exists && !errors.Is(err, disk.ErrNotExist)) {
		t.Fatalf("op on %q (exists %v): %v", n, exists, err)
	}
}

func checkRead(t *rapid.T, d *Disk, ref map[string][]byte, n string, off, l int) {
	b, err := d.ReadAt(n, int64(off), l)
	want, ok := ref[n]
	if !ok {
		if !errors.Is(err, disk.ErrNotExist) {
			t.Fatalf("read of missing %q: %v", n, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("read %q: %v", n, err)
	}
	want = want[min(off, len(want)):]
	want = want[:min(l, len(want))]
	if !bytes.Equal(b, want) {
		t.Fatalf("read %q at %d+%d: %d bytes differ from the reference's %d", n, off, l, len(b), len(want))
	}
}

func checkList(t *rapid.T, d *Disk, ref map[string][]byte, dn string) {
	got, err := d.List(dn)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for _, n := range slices.Sorted(maps.Keys(ref)) {
		if path.Dir(n) == dn {
			want = append(want, path.Base(n))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("list %q = %v, want %v", dn, got, want)
	}
}

// TestSpansMatchBitmap checks the dirty-range list against a plain per-byte bitmap.
func TestSpansMatchBitmap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s spans
		var ref []bool
		for range rapid.IntRange(0, 30).Draw(t, "ops") {
			lo := rapid.IntRange(0, 3000).Draw(t, "lo")
			hi := lo + rapid.IntRange(0, 1500).Draw(t, "len")
			if rapid.Bool().Draw(t, "cut") {
				s = s.cut(lo)
				for i := lo; i < len(ref); i++ {
					ref[i] = false
				}
			} else {
				s = s.add(lo, hi)
				for len(ref) < hi {
					ref = append(ref, false)
				}
				for i := lo; i < hi; i++ {
					ref[i] = true
				}
			}
		}
		got := make([]bool, len(ref))
		for i, sp := range s {
			if sp.lo >= sp.hi || (i > 0 && s[i-1].hi >= sp.lo) {
				t.Fatalf("spans not sorted, disjoint and non-adjacent: %v", s)
			}
			for j := sp.lo; j < sp.hi; j++ {
				got[j] = true
			}
		}
		if !slices.Equal(got, ref) {
			t.Fatalf("spans %v differ from the bitmap", s)
		}
		var units []int
		for i, b := range ref {
			if u := i / SectorSize; b && (len(units) == 0 || units[len(units)-1] != u) {
				units = append(units, u)
			}
		}
		if u := s.units(SectorSize); !slices.Equal(u, units) {
			t.Fatalf("units %v, want %v", u, units)
		}
		lo := rapid.IntRange(0, 4500).Draw(t, "wlo")
		hi := lo + rapid.IntRange(0, 2000).Draw(t, "wlen")
		n := 0
		for _, sp := range s.within(lo, hi) {
			if sp.lo < lo || sp.hi > hi || sp.lo >= sp.hi {
				t.Fatalf("within(%d, %d) returned %v", lo, hi, sp)
			}
			n += sp.hi - sp.lo
		}
		want := 0
		for i := lo; i < min(hi, len(ref)); i++ {
			if ref[i] {
				want++
			}
		}
		if n != want {
			t.Fatalf("within(%d, %d) covers %d bytes, want %d", lo, hi, n, want)
		}
	})
}
