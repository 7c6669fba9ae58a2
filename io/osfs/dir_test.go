package osfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/core/disk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openDir(t testing.TB) *Dir {
	t.Helper()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want one matching %v", err, target)
	}
}

func onDisk(t testing.TB, d *Dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Root(), filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenCreatesRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "b")
	d, err := Open(root)
	must(t, err)
	defer d.Close()
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Fatalf("root not created: %v", err)
	}
	must(t, d.Close())
	must(t, d.Close()) // idempotent
	wantIs(t, d.Create("x"), ErrClosed)
	wantIs(t, d.WriteAt("x", 0, []byte("a")), disk.ErrIO)
	_, err = d.List("")
	wantIs(t, err, ErrClosed)
	wantIs(t, d.SyncDir(""), ErrClosed)
}

func TestCreateWriteReadSync(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("wal/0001.seg")) // parent directory created
	must(t, d.WriteAt("wal/0001.seg", 0, []byte("hello")))
	must(t, d.WriteAt("wal/0001.seg", 10, []byte("world"))) // grows, leaves a hole
	must(t, d.Sync("wal/0001.seg"))
	must(t, d.SyncDir("wal"))
	want := []byte("hello\x00\x00\x00\x00\x00world")
	if got := onDisk(t, d, "wal/0001.seg"); !bytes.Equal(got, want) {
		t.Fatalf("file = %q, want %q", got, want)
	}
	got, err := d.ReadAt("wal/0001.seg", 0, 15)
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("ReadAt = %q, want %q", got, want)
	}

	// Create replaces an existing file with an empty one, and the cached handle with it.
	must(t, d.Create("wal/0001.seg"))
	if got := onDisk(t, d, "wal/0001.seg"); len(got) != 0 {
		t.Fatalf("after re-Create file = %q, want empty", got)
	}
	must(t, d.WriteAt("wal/0001.seg", 0, []byte("new")))
	if got := onDisk(t, d, "wal/0001.seg"); string(got) != "new" {
		t.Fatalf("file = %q, want %q", got, "new")
	}

	// Deep missing parents are created too.
	must(t, d.Create("p/0/1/seg"))
	if fi, err := os.Stat(filepath.Join(d.Root(), "p", "0", "1", "seg")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("deep create: %v", err)
	}
}

func TestCachedHandle(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("f"))
	must(t, d.WriteAt("f", 0, []byte("x")))
	d.mu.Lock()
	h := d.files["f"]
	d.mu.Unlock()
	if h == nil || h.f == nil {
		t.Fatal("no cached handle after Create")
	}
	f := h.f
	must(t, d.Sync("f"))
	_, err := d.ReadAt("f", 0, 1)
	must(t, err)
	must(t, d.Truncate("f", 0))
	if h.f != f {
		t.Fatal("handle reopened")
	}
	// Non-clean spellings share the handle.
	must(t, d.WriteAt("./f", 0, []byte("y")))
	d.mu.Lock()
	n := len(d.files)
	d.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d cache entries, want 1", n)
	}

	// A file created behind the Dir's back is opened on first use.
	must(t, os.WriteFile(filepath.Join(d.Root(), "g"), []byte("abc"), 0o644))
	got, err := d.ReadAt("g", 1, 10)
	must(t, err)
	if string(got) != "bc" {
		t.Fatalf("ReadAt = %q, want %q", got, "bc")
	}
}

func TestReadAtEOF(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("f"))
	must(t, d.WriteAt("f", 0, []byte("0123456789")))
	for _, tc := range []struct {
		off  int64
		n    int
		want string
	}{
		{0, 10, "0123456789"},
		{0, 4, "0123"},
		{6, 10, "6789"}, // short at EOF, no error
		{10, 5, ""},     // at EOF
		{20, 5, ""},     // past EOF
		{3, 0, ""},
	} {
		got, err := d.ReadAt("f", tc.off, tc.n)
		if err != nil {
			t.Fatalf("ReadAt(%d, %d): %v", tc.off, tc.n, err)
		}
		if string(got) != tc.want {
			t.Fatalf("ReadAt(%d, %d) = %q, want %q", tc.off, tc.n, got, tc.want)
		}
	}
	_, err := d.ReadAt("f", 0, -1)
	wantIs(t, err, disk.ErrIO)
	_, err = d.ReadAt("f", -1, 1)
	wantIs(t, err, disk.ErrIO)
}

func TestTruncate(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("f"))
	must(t, d.WriteAt("f", 0, []byte("0123456789")))
	must(t, d.Truncate("f", 4))
	if got := onDisk(t, d, "f"); string(got) != "0123" {
		t.Fatalf("after truncate %q", got)
	}
	must(t, d.Truncate("f", 8))
	if got := onDisk(t, d, "f"); string(got) != "0123\x00\x00\x00\x00" {
		t.Fatalf("after extend %q", got)
	}
	wantIs(t, d.Truncate("missing", 0), disk.ErrNotExist)
	wantIs(t, d.Truncate("f", -1), disk.ErrIO)
}

func TestMissingFile(t *testing.T) {
	d := openDir(t)
	wantIs(t, d.WriteAt("nope", 0, []byte("x")), disk.ErrNotExist)
	wantIs(t, d.Sync("nope"), disk.ErrNotExist)
	wantIs(t, d.Truncate("nope", 0), disk.ErrNotExist)
	_, err := d.ReadAt("nope", 0, 1)
	wantIs(t, err, disk.ErrNotExist)
	wantIs(t, d.Remove("nope"), disk.ErrNotExist)
	wantIs(t, d.Rename("nope", "other"), disk.ErrNotExist)
	wantIs(t, d.SyncDir("nodir"), disk.ErrNotExist)
	if _, err := os.Stat(filepath.Join(d.Root(), "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("WriteAt created a missing file")
	}
	d.mu.Lock()
	n := len(d.files)
	d.mu.Unlock()
	if n != 0 {
		t.Fatalf("failed opens left %d cache entries", n)
	}
}

func TestInvalidNames(t *testing.T) {
	d := openDir(t)
	outside := filepath.Join(filepath.Dir(d.Root()), "outside")
	for _, name := range []string{"", ".", "/etc/passwd", "/x", "..", "../outside", "a/../../outside", "a/..", "a/../b", "wal/../../x"} {
		err := d.Create(name)
		wantIs(t, err, ErrInvalidName)
		wantIs(t, err, disk.ErrIO)
		wantIs(t, d.WriteAt(name, 0, []byte("x")), ErrInvalidName)
		wantIs(t, d.Sync(name), ErrInvalidName)
		wantIs(t, d.Truncate(name, 0), ErrInvalidName)
		wantIs(t, d.Remove(name), ErrInvalidName)
		wantIs(t, d.Rename(name, "ok"), ErrInvalidName)
		wantIs(t, d.Rename("ok", name), ErrInvalidName)
		_, err = d.ReadAt(name, 0, 1)
		wantIs(t, err, ErrInvalidName)
	}
	for _, dir := range []string{"/", "/tmp", "..", "a/../.."} {
		_, err := d.List(dir)
		wantIs(t, err, ErrInvalidName)
		wantIs(t, d.SyncDir(dir), ErrInvalidName)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a file outside the root was created")
	}
	// The root itself is a valid directory name.
	_, err := d.List("")
	must(t, err)
	must(t, d.SyncDir("."))
	must(t, d.SyncDir(""))
}

func TestRenameMovesHandle(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("seg.tmp"))
	must(t, d.WriteAt("seg.tmp", 0, []byte("abc")))
	must(t, d.Create("seg"))
	must(t, d.WriteAt("seg", 0, []byte("old contents")))

	must(t, d.Rename("seg.tmp", "seg")) // replaces seg
	must(t, d.WriteAt("seg", 3, []byte("def")))
	must(t, d.Sync("seg"))
	if got := onDisk(t, d, "seg"); string(got) != "abcdef" {
		t.Fatalf("seg = %q, want %q", got, "abcdef")
	}
	wantIs(t, d.WriteAt("seg.tmp", 0, []byte("x")), disk.ErrNotExist)
	if _, err := os.Stat(filepath.Join(d.Root(), "seg.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("seg.tmp recreated")
	}
	d.mu.Lock()
	_, hasOld := d.files["seg.tmp"]
	n := len(d.files)
	d.mu.Unlock()
	if hasOld || n != 1 {
		t.Fatalf("cache after rename: old entry %v, %d entries", hasOld, n)
	}

	// Into another directory, and a file never opened by the Dir.
	must(t, os.Mkdir(filepath.Join(d.Root(), "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(d.Root(), "raw"), []byte("r"), 0o644))
	must(t, d.Rename("raw", "sub/raw"))
	must(t, d.WriteAt("sub/raw", 1, []byte("s")))
	if got := onDisk(t, d, "sub/raw"); string(got) != "rs" {
		t.Fatalf("sub/raw = %q", got)
	}
	// Rename onto itself is a no-op.
	must(t, d.Rename("seg", "seg"))
	if got := onDisk(t, d, "seg"); string(got) != "abcdef" {
		t.Fatalf("seg = %q after self-rename", got)
	}
}

func TestRemove(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("f"))
	must(t, d.WriteAt("f", 0, []byte("x")))
	must(t, d.Remove("f"))
	if _, err := os.Stat(filepath.Join(d.Root(), "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("file still there")
	}
	wantIs(t, d.WriteAt("f", 0, []byte("x")), disk.ErrNotExist)
	wantIs(t, d.Remove("f"), disk.ErrNotExist)
	d.mu.Lock()
	n := len(d.files)
	d.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d cache entries after remove", n)
	}
	// Recreate after remove gets a fresh file.
	must(t, d.Create("f"))
	got, err := d.ReadAt("f", 0, 10)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("recreated file holds %q", got)
	}
}

func TestList(t *testing.T) {
	d := openDir(t)
	names, err := d.List("wal")
	must(t, err)
	if len(names) != 0 {
		t.Fatalf("missing dir lists %v", names)
	}
	for _, n := range []string{"wal/c", "wal/a", "wal/b10", "wal/b2", "wal/sub/x", "top"} {
		must(t, d.Create(n))
	}
	must(t, os.Symlink("a", filepath.Join(d.Root(), "wal", "link")))
	names, err = d.List("wal")
	must(t, err)
	if want := []string{"a", "b10", "b2", "c"}; !slices.Equal(names, want) {
		t.Fatalf("List(wal) = %v, want %v", names, want)
	}
	names, err = d.List("")
	must(t, err)
	if want := []string{"top"}; !slices.Equal(names, want) {
		t.Fatalf("List(root) = %v, want %v", names, want)
	}
	_, err = d.List("top") // a file, not a directory
	wantIs(t, err, disk.ErrIO)
}

// failOnce returns a sync function that fails with errno the first time and counts calls.
func failOnce(errno syscall.Errno, calls *int) func(*os.File) error {
	failed := false
	return func(f *os.File) error {
		*calls++
		if !failed {
			failed = true
			return errno
		}
		return fdatasync(f)
	}
}

func TestSyncFailurePoisons(t *testing.T) {
	d := openDir(t)
	var syncs, writes int
	d.syncFile = failOnce(syscall.EIO, &syncs)
	d.writeFile = func(f *os.File, b []byte, off int64) (int, error) {
		writes++
		return f.WriteAt(b, off)
	}
	must(t, d.Create("f"))
	must(t, d.Create("g"))
	must(t, d.WriteAt("f", 0, []byte("data")))

	err := d.Sync("f")
	wantIs(t, err, disk.ErrIO)
	if errors.Is(err, disk.ErrNoSpace) || errors.Is(err, disk.ErrNotExist) {
		t.Fatalf("failed sync matches another error: %v", err)
	}
	syncs, writes = 0, 0

	// Linux would now report success; the Dir refuses without doing I/O.
	for range 2 {
		err = d.Sync("f")
		wantIs(t, err, disk.ErrIO)
		wantIs(t, err, ErrPoisoned)
		err = d.WriteAt("f", 4, []byte("more"))
		wantIs(t, err, disk.ErrIO)
		wantIs(t, err, ErrPoisoned)
	}
	if syncs != 0 || writes != 0 {
		t.Fatalf("poisoned file did I/O: %d syncs, %d writes", syncs, writes)
	}
	// Reads are still allowed (recovery reads what is there); other files are unaffected.
	got, err := d.ReadAt("f", 0, 10)
	must(t, err)
	if string(got) != "data" {
		t.Fatalf("read %q", got)
	}
	must(t, d.WriteAt("g", 0, []byte("ok")))
	must(t, d.Sync("g"))

	// The poison moves with a rename...
	must(t, d.Rename("f", "h"))
	wantIs(t, d.Sync("h"), ErrPoisoned)
	wantIs(t, d.WriteAt("h", 0, []byte("x")), ErrPoisoned)
	// ...and Create clears it.
	must(t, d.Create("h"))
	must(t, d.WriteAt("h", 0, []byte("fresh")))
	must(t, d.Sync("h"))
	if syncs != 2 || writes != 2 {
		t.Fatalf("after Create: %d syncs, %d writes, want 2 and 2", syncs, writes)
	}
}

func TestSyncENOSPCIsIO(t *testing.T) {
	d := openDir(t)
	var syncs int
	d.syncFile = failOnce(syscall.ENOSPC, &syncs)
	must(t, d.Create("f"))
	err := d.Sync("f")
	wantIs(t, err, disk.ErrIO)
	if errors.Is(err, disk.ErrNoSpace) {
		t.Fatalf("failed sync reported as retryable ErrNoSpace: %v", err)
	}
	wantIs(t, d.Sync("f"), ErrPoisoned)
}

func TestWriteNoSpace(t *testing.T) {
	d := openDir(t)
	d.writeFile = func(f *os.File, b []byte, off int64) (int, error) {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	must(t, d.Create("f"))
	err := d.WriteAt("f", 0, []byte("x"))
	wantIs(t, err, disk.ErrNoSpace)
	if errors.Is(err, disk.ErrIO) {
		t.Fatalf("ENOSPC also matches ErrIO: %v", err)
	}
	// A full disk does not poison: once there is room the write goes through.
	d.writeFile = (*os.File).WriteAt
	must(t, d.WriteAt("f", 0, []byte("x")))
	must(t, d.Sync("f"))
}

func TestMapErr(t *testing.T) {
	pe := func(e error) error { return &os.PathError{Op: "open", Path: "/r/f", Err: e} }
	for _, tc := range []struct {
		in   error
		want error
	}{
		{syscall.ENOSPC, disk.ErrNoSpace},
		{pe(syscall.ENOSPC), disk.ErrNoSpace},
		{pe(syscall.EDQUOT), disk.ErrNoSpace},
		{syscall.ENOENT, disk.ErrNotExist},
		{pe(syscall.ENOENT), disk.ErrNotExist},
		{os.ErrNotExist, disk.ErrNotExist},
		{syscall.EIO, disk.ErrIO},
		{pe(syscall.EIO), disk.ErrIO},
		{pe(syscall.EACCES), disk.ErrIO},
		{pe(syscall.ENOTDIR), disk.ErrIO},
		{os.ErrClosed, disk.ErrIO},
		{errors.New("odd"), disk.ErrIO},
		{fmt.Errorf("x: %w", disk.ErrNoSpace), disk.ErrNoSpace},
	} {
		got := mapErr(tc.in)
		if !errors.Is(got, tc.want) {
			t.Errorf("mapErr(%v) = %v, want %v", tc.in, got, tc.want)
		}
		n := 0
		for _, e := range []error{disk.ErrIO, disk.ErrNoSpace, disk.ErrNotExist} {
			if errors.Is(got, e) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("mapErr(%v) = %v matches %d operating errors", tc.in, got, n)
		}
		if !bytes.Contains([]byte(got.Error()), []byte(tc.in.Error())) {
			t.Errorf("mapErr(%v) = %q lost the original text", tc.in, got)
		}
	}
	if mapErr(nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}

// An op blocked in I/O on one file must not hold up ops on another.
func TestFilesDoNotSerialize(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("slow"))
	must(t, d.Create("fast"))
	entered, release := make(chan struct{}), make(chan struct{})
	d.syncFile = func(f *os.File) error {
		if filepath.Base(f.Name()) == "slow" {
			close(entered)
			<-release
		}
		return fdatasync(f)
	}
	done := make(chan error)
	go func() { done <- d.Sync("slow") }()
	<-entered
	// While "slow" is inside its sync: other files do full I/O, the same file can be
	// written and read, and new files can be created and listed.
	must(t, d.WriteAt("fast", 0, []byte("x")))
	must(t, d.Sync("fast"))
	must(t, d.WriteAt("slow", 0, []byte("y")))
	if _, err := d.ReadAt("slow", 0, 1); err != nil {
		t.Fatal(err)
	}
	must(t, d.Create("other"))
	if _, err := d.List(""); err != nil {
		t.Fatal(err)
	}
	close(release)
	must(t, <-done)
}

// Remove and Create of a file wait for I/O in progress on it rather than closing the
// descriptor underneath it.
func TestRemoveWaitsForIO(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("f"))
	entered, release := make(chan struct{}), make(chan struct{})
	d.syncFile = func(f *os.File) error {
		close(entered)
		<-release
		return fdatasync(f)
	}
	syncDone, removeDone := make(chan error), make(chan error)
	go func() { syncDone <- d.Sync("f") }()
	<-entered
	go func() { removeDone <- d.Remove("f") }()
	select {
	case err := <-removeDone:
		t.Fatalf("Remove returned (%v) while a sync of the file was in progress", err)
	default:
	}
	close(release)
	must(t, <-syncDone) // not "file already closed"
	must(t, <-removeDone)
}

func TestConcurrentOps(t *testing.T) {
	d := openDir(t)
	const files, writes = 8, 50
	var wg sync.WaitGroup
	for i := range files {
		wg.Go(func() {
			name := fmt.Sprintf("p%d/seg", i)
			if err := d.Create(name); err != nil {
				t.Error(err)
				return
			}
			var inner sync.WaitGroup
			for j := range writes {
				inner.Go(func() {
					if err := d.WriteAt(name, int64(j*4), fmt.Appendf(nil, "%04d", j)); err != nil {
						t.Error(err)
					}
				})
			}
			inner.Wait()
			if err := d.Sync(name); err != nil {
				t.Error(err)
			}
			if _, err := d.List(fmt.Sprintf("p%d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range files {
		got := onDisk(t, d, fmt.Sprintf("p%d/seg", i))
		for j := range writes {
			if s := string(got[j*4 : j*4+4]); s != fmt.Sprintf("%04d", j) {
				t.Fatalf("p%d record %d = %q", i, j, s)
			}
		}
	}
}

func TestConcurrentRenameRemoveCreate(t *testing.T) {
	// Namespace ops racing on overlapping names must not deadlock or corrupt the cache.
	d := openDir(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				a, b := fmt.Sprintf("n%d", (g+i)%3), fmt.Sprintf("n%d", (g+i+1)%3)
				d.Create(a)
				d.WriteAt(a, 0, []byte("x"))
				d.Rename(a, b)
				d.Sync(b)
				d.Remove(a)
			}
		})
	}
	wg.Wait()
	// Whatever survived, the cache agrees with the disk: every cached file exists.
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, h := range d.files {
		if h.dead {
			t.Errorf("dead handle %s in cache", name)
		}
		if h.f == nil {
			continue
		}
		a, err1 := h.f.Stat()
		b, err2 := os.Stat(filepath.Join(d.Root(), name))
		if err1 != nil || err2 != nil || !os.SameFile(a, b) {
			t.Errorf("cached handle for %s is not the file on disk (%v, %v)", name, err1, err2)
		}
	}
}

func TestWriteSyncAllocs(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("wal/seg"))
	buf := make([]byte, 1024)
	var err error
	allocs := testing.AllocsPerRun(50, func() {
		if err = d.WriteAt("wal/seg", 0, buf); err == nil {
			err = d.Sync("wal/seg")
		}
	})
	must(t, err)
	if allocs != 0 {
		t.Fatalf("WriteAt+Sync allocates %.1f times per call", allocs)
	}
}

// BenchmarkWriteSync measures this machine's cost of a 1 KiB pwrite followed by
// fdatasync: appending (the file grows, so the size must be persisted) and overwriting a
// pre-sized, allocated file.
func BenchmarkWriteSync(b *testing.B) {
	buf := bytes.Repeat([]byte{0xa5}, 1024)
	for _, mode := range []string{"append", "presized"} {
		b.Run(mode, func(b *testing.B) {
			d := openDir(b)
			must(b, d.Create("seg"))
			const span = 64 << 20
			if mode == "presized" {
				// Allocate real blocks (not a sparse hole) and make them durable.
				chunk := make([]byte, 1<<20)
				for off := int64(0); off < span; off += int64(len(chunk)) {
					must(b, d.WriteAt("seg", off, chunk))
				}
				must(b, d.Sync("seg"))
			}
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				off := int64(i) * int64(len(buf))
				if mode == "presized" {
					off %= span
				}
				if err := d.WriteAt("seg", off, buf); err != nil {
					b.Fatal(err)
				}
				if err := d.Sync("seg"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "syncs/s")
		})
	}
}

// ListDirs lists directories only; RemoveDir removes an empty one, refuses one with a
// file (ErrNotEmpty) and reports a missing one (ErrNotExist).
func TestListDirsAndRemoveDir(t *testing.T) {
	d := openDir(t)
	must(t, d.Create("parts/a-0/seg"))
	must(t, d.Create("parts/b-0/seg"))
	must(t, d.Create("parts/file"))
	got, err := d.ListDirs("parts")
	must(t, err)
	if !slices.Equal(got, []string{"a-0", "b-0"}) {
		t.Fatalf("ListDirs: %v", got)
	}
	if got, err := d.ListDirs("missing"); err != nil || len(got) != 0 {
		t.Fatalf("ListDirs of a missing directory: %v %v", got, err)
	}
	wantIs(t, d.RemoveDir("parts/a-0"), disk.ErrNotEmpty)
	must(t, d.Remove("parts/a-0/seg"))
	must(t, d.RemoveDir("parts/a-0"))
	must(t, d.SyncDir("parts"))
	wantIs(t, d.RemoveDir("parts/a-0"), disk.ErrNotExist)
	if _, err := os.Stat(filepath.Join(d.Root(), "parts/a-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory is still there: %v", err)
	}
	wantIs(t, d.RemoveDir("../x"), disk.ErrIO)
	wantIs(t, d.RemoveDir(""), disk.ErrIO)
}
