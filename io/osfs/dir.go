package osfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/narad/narad/core/disk"
)

// Permissions of the files and directories a Dir creates (before the umask).
const (
	FilePerm = 0o644
	DirPerm  = 0o755
)

// Errors a Dir returns besides the operating errors of core/disk. Each is returned wrapped
// together with disk.ErrIO, so errors.Is matches both.
var (
	// ErrInvalidName: the name is empty, absolute or has a ".." element.
	ErrInvalidName = errors.New("osfs: invalid name")
	// ErrPoisoned: an earlier Sync of the file failed; see Dir.Sync.
	ErrPoisoned = errors.New("osfs: file poisoned by a failed sync")
	// ErrClosed: the Dir was closed.
	ErrClosed = errors.New("osfs: dir closed")
)

// Dir implements disk.FS over the files below a root directory.
//
// It keeps every file it has touched open (O_RDWR) in a handle cache until the file is
// removed, renamed over, or the Dir is closed, so writes, syncs and reads do not reopen
// files. The cache's mutex is held only to look a name up; each file has its own
// read-write lock: I/O (write, read, sync, truncate) holds it shared, and the ops that
// open, close or move the handle (Create, Rename, Remove, the first open) hold it
// exclusively. So ops on different files never wait for each other's I/O, several ops on
// one file run at once, and a handle is never closed under an op that is using it.
//
// All methods are safe for concurrent use.
type Dir struct {
	root string // absolute

	// Seams for fault-injection tests; set once, before the Dir is shared.
	syncFile  func(f *os.File) error                             // default fdatasync
	writeFile func(f *os.File, b []byte, off int64) (int, error) // default (*os.File).WriteAt

	mu     sync.Mutex
	files  map[string]*handle // clean relative name -> handle
	closed bool

	deviceCached atomic.Bool // ReadDevice served from the page cache (benchmarks only; see SetDeviceReadsCached)
}

// handle is the cache entry of one file name.
type handle struct {
	mu sync.RWMutex // shared: I/O on f; exclusive: open, close or replace f
	f  *os.File     // nil until opened; never nil while mu is held shared by an op
	// dead: the handle left Dir.files (file removed or renamed away, open failed, Dir
	// closed); whoever finds it dead looks the name up again. dead implies f == nil.
	dead     bool
	poisoned atomic.Bool // a sync failed; cleared only by Create

	// direct is f's file opened again with O_DIRECT for ReadDevice, opened at its first
	// use (under dmu, with mu held shared) and closed with f; nil while f is.
	dmu    sync.Mutex
	direct *os.File
}

// closeFiles closes f and its O_DIRECT twin, if open, and returns f's Close error. The
// caller holds mu exclusively.
func (h *handle) closeFiles() error {
	var err error
	if h.f != nil {
		err = h.f.Close()
		h.f = nil
	}
	if h.direct != nil {
		_ = h.direct.Close() // a read-only descriptor: its close reports nothing of the data
		h.direct = nil
	}
	return err
}

// Open returns a Dir rooted at root, creating root (and its parents) if missing. When
// Open creates root it also fsyncs root's parent so that the new directory is durable.
func Open(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", disk.ErrIO, err)
	}
	_, statErr := os.Stat(abs)
	if err := os.MkdirAll(abs, DirPerm); err != nil {
		return nil, mapErr(err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := syncDir(filepath.Dir(abs)); err != nil {
			return nil, mapErr(err)
		}
	}
	d := &Dir{
		root:      abs,
		syncFile:  fdatasync,
		writeFile: (*os.File).WriteAt,
		files:     make(map[string]*handle),
	}
	d.deviceCached.Store(benchCachedReadBack)
	return d, nil
}

// Root returns the absolute path of the root directory.
func (d *Dir) Root() string { return d.root }

// Close closes every cached handle, waiting for ops in progress on them. Later ops fail
// with an error matching disk.ErrIO and ErrClosed. Close does not sync anything.
// Closing a closed Dir is a no-op.
func (d *Dir) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	hs := make([]*handle, 0, len(d.files))
	for _, h := range d.files {
		hs = append(hs, h)
	}
	d.files = nil
	d.mu.Unlock()

	var first error
	for _, h := range hs {
		h.mu.Lock()
		if err := h.closeFiles(); err != nil && first == nil {
			first = mapErr(err)
		}
		h.dead = true
		h.mu.Unlock()
	}
	return first
}

// Create creates an empty file (O_RDWR|O_CREATE|O_TRUNC), replacing any file of that
// name and clearing its poisoned mark. If the parent directory is missing it is created,
// and so are missing ancestors, each followed by an fsync of the directory that holds it,
// so the new directories are durable; the new file's own entry is durable only after the
// core's SyncDir of the parent.
func (d *Dir) Create(name string) error {
	key, err := cleanName(name, false)
	if err != nil {
		return err
	}
	full := d.full(key)
	for {
		h, err := d.entry(key)
		if err != nil {
			return err
		}
		h.mu.Lock()
		if h.dead {
			h.mu.Unlock()
			continue
		}
		f, err := os.OpenFile(full, os.O_RDWR|os.O_CREATE|os.O_TRUNC, FilePerm)
		if errors.Is(err, fs.ErrNotExist) {
			if err = d.mkdirAll(path.Dir(key)); err == nil {
				f, err = os.OpenFile(full, os.O_RDWR|os.O_CREATE|os.O_TRUNC, FilePerm)
			}
		}
		if err != nil {
			if h.f == nil {
				d.drop(key, h)
			}
			h.mu.Unlock()
			return mapErr(err)
		}
		_ = h.closeFiles() // the old descriptors; their inode is either this file or replaced
		h.f = f
		h.poisoned.Store(false)
		h.mu.Unlock()
		return nil
	}
}

// WriteAt writes data at off (pwrite), growing the file if needed. It fails with
// disk.ErrNotExist if the file is missing, and with disk.ErrIO and ErrPoisoned,
// without writing, if an earlier Sync of the file failed.
//
// On ENOSPC or EDQUOT it returns an error matching disk.ErrNoSpace. A real file
// system may have stored a prefix of data before running out of space: the bytes in
// [off, off+len(data)) are then undefined (old, new or a mix), never acknowledged data.
func (d *Dir) WriteAt(name string, off int64, data []byte) error {
	h, err := d.acquire(name)
	if err != nil {
		return err
	}
	if h.poisoned.Load() {
		h.mu.RUnlock()
		return poisonedErr(name)
	}
	_, err = d.writeFile(h.f, data, off)
	h.mu.RUnlock()
	return mapErr(err)
}

// ReadAt reads up to n bytes at off. The result is shorter than n only at end of file;
// reaching end of file is not an error.
func (d *Dir) ReadAt(name string, off int64, n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: read %s: negative length %d", disk.ErrIO, name, n)
	}
	h, err := d.acquire(name)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	m, err := h.f.ReadAt(buf, off)
	h.mu.RUnlock()
	if err != nil && err != io.EOF {
		return nil, mapErr(err)
	}
	return buf[:m], nil
}

// Sync makes the file's completed writes and its size durable with fdatasync (never
// fsync). If fdatasync fails the file is poisoned: this and every later WriteAt and Sync
// of it return an error matching disk.ErrIO (the later ones without doing any I/O),
// until Create recreates the file. A failed fdatasync always maps to ErrIO, even for
// ENOSPC, because the kernel may already have dropped the unwritten pages.
func (d *Dir) Sync(name string) error {
	h, err := d.acquire(name)
	if err != nil {
		return err
	}
	if h.poisoned.Load() {
		h.mu.RUnlock()
		return poisonedErr(name)
	}
	if err = d.syncFile(h.f); err != nil {
		h.poisoned.Store(true)
		h.mu.RUnlock()
		return fmt.Errorf("%w: fdatasync %s: %v", disk.ErrIO, name, err)
	}
	h.mu.RUnlock()
	return nil
}

// Truncate sets the size of an existing file (ftruncate).
func (d *Dir) Truncate(name string, size int64) error {
	h, err := d.acquire(name)
	if err != nil {
		return err
	}
	err = h.f.Truncate(size)
	h.mu.RUnlock()
	return mapErr(err)
}

// Rename renames from to to (rename(2), atomic, replacing to). The cached handle, and its
// poisoned mark, move with the file; a handle cached under to is closed.
func (d *Dir) Rename(from, to string) error {
	kf, err := cleanName(from, false)
	if err != nil {
		return err
	}
	kt, err := cleanName(to, false)
	if err != nil {
		return err
	}
	if kf == kt {
		if err := d.checkOpen(); err != nil {
			return err
		}
		// rename(2) of a file onto itself does nothing; it still reports a missing file.
		return mapErr(os.Rename(d.full(kf), d.full(kt)))
	}
	for {
		hf, err := d.entry(kf)
		if err != nil {
			return err
		}
		ht, err := d.entry(kt)
		if err != nil {
			return err
		}
		first, second := hf, ht
		if kt < kf {
			first, second = ht, hf
		}
		first.mu.Lock()
		second.mu.Lock()
		if hf.dead || ht.dead {
			second.mu.Unlock()
			first.mu.Unlock()
			continue
		}
		err = os.Rename(d.full(kf), d.full(kt))
		if err == nil {
			_ = ht.closeFiles() // the replaced file's descriptors
			ht.f, hf.f = hf.f, nil
			ht.direct, hf.direct = hf.direct, nil
			ht.poisoned.Store(hf.poisoned.Load())
			hf.poisoned.Store(false)
		}
		if hf.f == nil {
			d.drop(kf, hf)
		}
		if ht.f == nil {
			d.drop(kt, ht)
		}
		second.mu.Unlock()
		first.mu.Unlock()
		return mapErr(err)
	}
}

// Remove removes the file and closes its cached handle. A missing file is ErrNotExist.
func (d *Dir) Remove(name string) error {
	key, err := cleanName(name, false)
	if err != nil {
		return err
	}
	for {
		h, err := d.entry(key)
		if err != nil {
			return err
		}
		h.mu.Lock()
		if h.dead {
			h.mu.Unlock()
			continue
		}
		err = os.Remove(d.full(key))
		// Keep the handle (and a poisoned mark) if the file may still be there.
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			_ = h.closeFiles() // the file is removed: nothing of it is read again
		}
		if h.f == nil {
			d.drop(key, h)
		}
		h.mu.Unlock()
		return mapErr(err)
	}
}

// List returns the names of the regular files in directory dir ("" or "." is the root),
// sorted. Subdirectories, symlinks and other entries are left out. A missing directory
// lists as empty.
func (d *Dir) List(dir string) ([]string, error) {
	return d.listWhere(dir, func(e fs.DirEntry) bool { return e.Type().IsRegular() })
}

// ListDirs returns the names of the directories in directory dir ("" or "." is the
// root), sorted. A missing directory lists as empty.
func (d *Dir) ListDirs(dir string) ([]string, error) {
	return d.listWhere(dir, fs.DirEntry.IsDir)
}

// listWhere returns the sorted names of the entries of directory dir that keep holds.
func (d *Dir) listWhere(dir string, keep func(fs.DirEntry) bool) ([]string, error) {
	key, err := cleanName(dir, true)
	if err != nil {
		return nil, err
	}
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(d.full(key)) // sorted by name
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if keep(e) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// RemoveDir removes the empty directory dir (not the root). Durable once its parent is
// synced (SyncDir). A missing directory is ErrNotExist, one with entries ErrNotEmpty.
func (d *Dir) RemoveDir(dir string) error {
	key, err := cleanName(dir, false)
	if err != nil {
		return err
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	err = syscall.Rmdir(d.full(key))
	switch {
	case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("%w: %s", disk.ErrNotEmpty, dir)
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%w: %s", disk.ErrNotExist, dir)
	}
	return mapErr(err)
}

// SyncDir fsyncs directory dir ("" or "." is the root), making the creates, renames and
// removes done in it before the call durable.
func (d *Dir) SyncDir(dir string) error {
	key, err := cleanName(dir, true)
	if err != nil {
		return err
	}
	if err := d.checkOpen(); err != nil {
		return err
	}
	return mapErr(syncDir(d.full(key)))
}

// entry returns the handle cached for key, adding an unopened one if there is none.
func (d *Dir) entry(key string) (*handle, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, closedErr()
	}
	h := d.files[key]
	if h == nil {
		h = &handle{}
		d.files[key] = h
	}
	d.mu.Unlock()
	return h, nil
}

// acquire returns the open handle of the existing file name with h.mu held shared. The
// caller does its I/O on h.f and then calls h.mu.RUnlock.
func (d *Dir) acquire(name string) (*handle, error) {
	key, err := cleanName(name, false)
	if err != nil {
		return nil, err
	}
	for {
		h, err := d.entry(key)
		if err != nil {
			return nil, err
		}
		h.mu.RLock()
		if h.f != nil {
			return h, nil
		}
		h.mu.RUnlock()

		// First use of the file (or it was just closed): open it.
		h.mu.Lock()
		if !h.dead && h.f == nil {
			f, err := os.OpenFile(d.full(key), os.O_RDWR, 0)
			if err != nil {
				d.drop(key, h)
				h.mu.Unlock()
				return nil, mapErr(err)
			}
			h.f = f
		}
		h.mu.Unlock()
	}
}

// drop marks h dead and removes it from the cache. The caller holds h.mu exclusively and
// has closed h.f.
func (d *Dir) drop(key string, h *handle) {
	_ = h.closeFiles() // the caller closed h.f: only the read descriptor is left
	h.dead = true
	d.mu.Lock()
	if d.files[key] == h {
		delete(d.files, key)
	}
	d.mu.Unlock()
}

func (d *Dir) checkOpen() error {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return closedErr()
	}
	return nil
}

// full returns the OS path of a clean relative name.
func (d *Dir) full(key string) string {
	if key == "." {
		return d.root
	}
	return d.root + string(filepath.Separator) + filepath.FromSlash(key)
}

// mkdirAll creates directory rel and its missing ancestors below the root. After
// creating a directory it fsyncs the directory holding it, so the new entry is durable.
// It also does so when it finds the directory already there (a concurrent Create may
// have made it and not yet synced its parent).
func (d *Dir) mkdirAll(rel string) error {
	if rel == "." {
		return nil // the root; if it is gone, the open that follows reports it
	}
	parent := path.Dir(rel)
	err := os.Mkdir(d.full(rel), DirPerm)
	if errors.Is(err, fs.ErrNotExist) && parent != "." {
		if err = d.mkdirAll(parent); err == nil {
			err = os.Mkdir(d.full(rel), DirPerm)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(d.full(parent))
}

// cleanName checks a slash-separated relative name and returns its clean form, the cache
// key. It rejects absolute names and any ".." element; dirOK admits "" and "." (the root).
func cleanName(name string, dirOK bool) (string, error) {
	if name == "" || name == "." {
		if dirOK {
			return ".", nil
		}
		return "", invalidName(name)
	}
	if name[0] == '/' {
		return "", invalidName(name)
	}
	for rest := name; ; {
		elem := rest
		i := strings.IndexByte(rest, '/')
		if i >= 0 {
			elem = rest[:i]
		}
		if elem == ".." {
			return "", invalidName(name)
		}
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
	key := path.Clean(name) // allocates only if name was not clean
	if key == "." && !dirOK {
		return "", invalidName(name)
	}
	return key, nil
}

// fdatasync is the default Dir.syncFile.
func fdatasync(f *os.File) error {
	fd := int(f.Fd())
	for {
		err := syscall.Fdatasync(fd)
		if err != syscall.EINTR {
			return err
		}
	}
}

// syncDir fsyncs the directory at OS path p.
func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mapErr maps an OS error to one matching an operating error of core/disk, keeping its
// text: ENOSPC and EDQUOT to ErrNoSpace, ENOENT to ErrNotExist, anything else to ErrIO.
// Errors that already match one of them are returned as they are.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, disk.ErrIO), errors.Is(err, disk.ErrNoSpace), errors.Is(err, disk.ErrNotExist):
		return err
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w: %v", disk.ErrNoSpace, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %v", disk.ErrNotExist, err)
	default:
		return fmt.Errorf("%w: %v", disk.ErrIO, err)
	}
}

func invalidName(name string) error {
	return fmt.Errorf("%w: %w %q", disk.ErrIO, ErrInvalidName, name)
}

func poisonedErr(name string) error {
	return fmt.Errorf("%w: %w: %s", disk.ErrIO, ErrPoisoned, name)
}

func closedErr() error {
	return fmt.Errorf("%w: %w", disk.ErrIO, ErrClosed)
}

var _ disk.FS = (*Dir)(nil)
