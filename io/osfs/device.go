package osfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/narad/narad/core/disk"
)

// deviceAlign is the alignment of an O_DIRECT read: offset, length and buffer address.
// 4096 covers every logical block size Linux file systems use (512 and 4096).
const deviceAlign = 4096

// fadvDontNeed is POSIX_FADV_DONTNEED (Linux, every architecture Go supports).
const fadvDontNeed = 4

// ReadDevice reads up to n bytes at off from the device, bypassing the page cache
// (disk.Op.Device). It reads the 4096-aligned range covering [off, off+n) into an
// aligned buffer through a second descriptor of the file opened with O_DIRECT (kept with
// the file's handle, so a read-back costs one pread): the kernel writes back any dirty
// page of that range first, then reads the blocks from the device, so a write that
// reached the cache but was stored otherwise (a corrupted, lost or misdirected write)
// shows here and not in ReadAt.
//
// When the file system refuses O_DIRECT (EINVAL at open or read: tmpfs, some FUSE and
// overlay mounts), it falls back to posix_fadvise(POSIX_FADV_DONTNEED) over the range,
// which drops the range's clean cached pages, then an ordinary read, which must fetch
// them from the device again. The fallback is weaker: a page the kernel cannot drop
// (dirty, mapped, or on tmpfs, where the cache is the storage) is read from the cache.
func (d *Dir) ReadDevice(name string, off int64, n int) ([]byte, error) {
	if d.deviceCached.Load() {
		return d.ReadAt(name, off, n)
	}
	if n < 0 || off < 0 {
		return nil, fmt.Errorf("%w: read-device %s at %d+%d: negative", disk.ErrIO, name, off, n)
	}
	h, err := d.acquire(name)
	if err != nil {
		return nil, err
	}
	defer h.mu.RUnlock()
	if n == 0 {
		return []byte{}, nil
	}
	df, err := h.directFile(d, name)
	if err == nil {
		var out []byte
		if out, err = readDirect(df, off, n); err == nil {
			return out, nil
		}
	}
	if errors.Is(err, syscall.EINVAL) {
		return readDropped(h.f, off, n)
	}
	return nil, mapErr(err)
}

// directFile returns the handle's O_DIRECT descriptor of d's file name, opening it at
// first use (its path is made only then). The caller holds h.mu shared (so f, and the
// file, stay).
func (h *handle) directFile(d *Dir, name string) (*os.File, error) {
	h.dmu.Lock()
	defer h.dmu.Unlock()
	if h.direct == nil {
		key, _ := cleanName(name, false) // acquire accepted it
		f, err := os.OpenFile(d.full(key), os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			return nil, err
		}
		h.direct = f
	}
	return h.direct, nil
}

// readDirect reads [off, off+n) of f, an O_DIRECT descriptor, through an aligned buffer.
// The result is shorter than n only at end of file.
func readDirect(f *os.File, off int64, n int) ([]byte, error) {
	lo := off &^ (deviceAlign - 1)
	hi := (off + int64(n) + deviceAlign - 1) &^ (deviceAlign - 1)
	blk, buf := getAligned(int(hi - lo))
	defer putAligned(blk) // what is returned is a copy
	m := 0
	for m < len(buf) { // a direct read may return less than asked before end of file
		k, err := f.ReadAt(buf[m:], lo+int64(m))
		m += k
		if err == io.EOF || (err == nil && k == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
		if k%deviceAlign != 0 {
			break // a short, unaligned count is the end of the file
		}
	}
	start := int(off - lo)
	if m <= start {
		return []byte{}, nil
	}
	if mutSharedReadBack {
		return buf[start:min(m, start+n)], nil
	}
	return append([]byte{}, buf[start:min(m, start+n)]...), nil
}

// readDropped is the fallback of ReadDevice: drop the range's cached pages, then read.
func readDropped(f *os.File, off int64, n int) ([]byte, error) {
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), uintptr(off), uintptr(n), fadvDontNeed, 0, 0)
	if errno != 0 {
		return nil, mapErr(fmt.Errorf("posix_fadvise: %w", errno))
	}
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return nil, mapErr(err)
	}
	return buf[:m], nil
}

// SetDeviceReadsCached makes ReadDevice read through the page cache, like ReadAt: the
// read-back as it was before it bypassed the cache. It exists so that a benchmark can
// measure both in one run (io/nodeshell BenchmarkProduce1KiB); a node must never set it,
// since a cached read-back proves the kernel's buffer, not the device.
func (d *Dir) SetDeviceReadsCached(on bool) { d.deviceCached.Store(on) }
