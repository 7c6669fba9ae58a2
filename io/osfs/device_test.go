package osfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/narad/narad/core/disk"
)

// needDirect skips the test when the file system of dir refuses O_DIRECT (tmpfs), since
// then ReadDevice takes its fallback and the test would not exercise the device read.
func needDirect(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "probe")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_DIRECT, FilePerm)
	if errors.Is(err, syscall.EINVAL) {
		t.Skipf("the file system of %s refuses O_DIRECT (tmpfs?): ReadDevice would use its fadvise fallback", dir)
	}
	must(t, err)
	f.Close()
	must(t, os.Remove(p))
}

// TestReadDeviceReturnsSyncedBytes writes a file of a few pages, syncs it, and reads
// ranges back from the device: unaligned, across page boundaries, at and past the end.
func TestReadDeviceReturnsSyncedBytes(t *testing.T) {
	d := openDir(t)
	needDirect(t, d.Root())
	data := make([]byte, 3*deviceAlign+100)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	must(t, d.Create("wal/1.seg"))
	must(t, d.WriteAt("wal/1.seg", 0, data))
	must(t, d.Sync("wal/1.seg"))
	for _, tc := range []struct {
		off int64
		n   int
	}{{0, len(data)}, {1, 10}, {deviceAlign - 3, 7}, {2*deviceAlign + 5, deviceAlign}, {int64(len(data)) - 4, 100}, {int64(len(data)) + 1, 5}, {9, 0}} {
		got, err := d.ReadDevice("wal/1.seg", tc.off, tc.n)
		must(t, err)
		lo := min(int(tc.off), len(data))
		want := data[lo:min(lo+tc.n, len(data))]
		if !bytes.Equal(got, want) {
			t.Fatalf("ReadDevice(%d, %d) = %d bytes, want %d equal to the written ones", tc.off, tc.n, len(got), len(want))
		}
	}
	_, err := d.ReadDevice("wal/none", 0, 1)
	wantIs(t, err, disk.ErrNotExist)
	_, err = d.ReadDevice("wal/1.seg", -1, 1)
	wantIs(t, err, disk.ErrIO)
}

// TestReadDeviceSeesADirectWrite changes a synced range behind the cache's back with an
// O_DIRECT write from another descriptor, and shows ReadDevice returns the new device
// bytes. (Linux invalidates the cached pages of a range written with O_DIRECT, so an
// unprivileged test cannot keep a stale cached copy to compare with; the simulated disk's
// tests show the cached and device reads differing.)
func TestReadDeviceSeesADirectWrite(t *testing.T) {
	d := openDir(t)
	needDirect(t, d.Root())
	old := bytes.Repeat([]byte{'a'}, 2*deviceAlign)
	must(t, d.Create("p/seg"))
	must(t, d.WriteAt("p/seg", 0, old))
	must(t, d.Sync("p/seg"))
	if _, err := d.ReadAt("p/seg", 0, len(old)); err != nil { // the range is now cached
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(d.Root(), "p", "seg"), os.O_WRONLY|syscall.O_DIRECT, 0)
	must(t, err)
	bad := alignedBuf(deviceAlign)
	copy(bad, bytes.Repeat([]byte{'z'}, deviceAlign))
	_, err = f.WriteAt(bad, deviceAlign)
	must(t, err)
	must(t, f.Close())
	got, err := d.ReadDevice("p/seg", deviceAlign-2, 4)
	must(t, err)
	if string(got) != "aazz" {
		t.Fatalf("ReadDevice = %q, want %q", got, "aazz")
	}
}

// TestReadDroppedFallback runs the fadvise fallback directly: it reads what was synced.
func TestReadDroppedFallback(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("f"))
	must(t, d.WriteAt("f", 0, []byte("0123456789")))
	must(t, d.Sync("f"))
	f, err := os.Open(filepath.Join(d.Root(), "f"))
	must(t, err)
	defer f.Close()
	got, err := readDropped(f, 3, 20)
	must(t, err)
	if string(got) != "3456789" {
		t.Fatalf("readDropped = %q, want %q", got, "3456789")
	}
}

// A read-back allocates only the bytes it returns: the aligned buffer it reads into is
// pooled (aligned.go).
func TestReadDeviceAllocatesOnlyItsResult(t *testing.T) {
	d := openDir(t)
	needDirect(t, d.Root())
	must(t, d.Create("wal/1.seg"))
	must(t, d.WriteAt("wal/1.seg", 0, make([]byte, 3*deviceAlign)))
	must(t, d.Sync("wal/1.seg"))
	var err error
	allocs := testing.AllocsPerRun(100, func() { _, err = d.ReadDevice("wal/1.seg", 100, 1024) })
	must(t, err)
	if allocs > 1 {
		t.Fatalf("a read-back of 1 KiB allocates %.0f times, want 1 (its result)", allocs)
	}
}

// Read-backs one after the other and running at once, of sizes in different pool classes
// and in the same one, each get their own file's bytes: a pooled buffer is never shared
// while in use, and what a read-back returns is never the pooled buffer
// (narad_mut_sharedreadback).
func TestConcurrentReadDevicesGetTheirOwnBytes(t *testing.T) {
	d := openDir(t)
	needDirect(t, d.Root())
	sizes := []int{100, deviceAlign, 3*deviceAlign + 7, 70_000}
	for i, n := range sizes {
		name := "wal/" + string(rune('a'+i)) + ".seg"
		must(t, d.Create(name))
		must(t, d.WriteAt(name, 0, bytes.Repeat([]byte{byte(i + 1)}, n)))
		must(t, d.Sync(name))
	}
	// One after the other: a result stays what it was when the next read-back of the same
	// class reuses the pooled buffer.
	first, err := d.ReadDevice("wal/a.seg", 0, sizes[0])
	must(t, err)
	_, err = d.ReadDevice("wal/b.seg", 0, sizes[0])
	must(t, err)
	if !bytes.Equal(first, bytes.Repeat([]byte{1}, sizes[0])) {
		t.Fatal("a read-back's result changed under the next read-back")
	}
	errs := make(chan error, 4*len(sizes))
	for w := range 4 * len(sizes) {
		go func() {
			i := w % len(sizes)
			want := bytes.Repeat([]byte{byte(i + 1)}, sizes[i])
			for range 50 {
				got, err := d.ReadDevice("wal/"+string(rune('a'+i))+".seg", 0, sizes[i])
				if err == nil && !bytes.Equal(got, want) {
					err = errors.New("a read-back returned another read's bytes")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 * len(sizes) {
		must(t, <-errs)
	}
}
