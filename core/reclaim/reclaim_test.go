package reclaim_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/reclaim"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

var roots = []string{"parts", "acks"}

// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface{ Fatal(args ...any) }

// deadSet is a Dead function: a directory is dead when its name is in the set.
func deadSet(names ...string) func(root, name string) bool {
	return func(_, name string) bool { return slices.Contains(names, name) }
}

// populate makes, under each root, directory name with files files, synced.
func populate(t fataler, fs disk.FS, names []string, files int) {
	for _, root := range roots {
		for _, name := range names {
			dir := root + "/" + name
			for f := range files {
				p := fmt.Sprintf("%s/%08d.seg", dir, f)
				for _, err := range []error{fs.Create(p), fs.WriteAt(p, 0, []byte(p)), fs.Sync(p)} {
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := fs.SyncDir(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// driver runs a Reclaimer's ops on fs one at a time, keeping those not yet run.
type driver struct {
	r       *reclaim.Reclaimer
	fs      disk.FS
	pending []disk.Op
}

// run runs at most opsMax ops (-1: until none is left).
func (dv *driver) run(nowNs int64, opsMax int) {
	for n := 0; n != opsMax; n++ {
		dv.pending = append(dv.pending, dv.r.Ready().Ops...)
		if len(dv.pending) == 0 {
			return
		}
		op := dv.pending[0]
		dv.pending = dv.pending[1:]
		dv.r.DiskDone(nowNs, disk.Apply(dv.fs, op))
	}
}

func drive(r *reclaim.Reclaimer, fs disk.FS, nowNs int64, opsMax int) {
	(&driver{r: r, fs: fs}).run(nowNs, opsMax)
}

func dirsOf(t fataler, fs disk.FS) []string {
	var out []string
	for _, root := range roots {
		names, err := fs.ListDirs(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			out = append(out, root+"/"+n)
		}
	}
	return out
}

// A pass removes every dead directory, files and all, durably (a crash after it brings
// none back), and leaves the live ones whole.
func TestPassRemovesDeadDirectoriesDurably(t *testing.T) {
	d := sim.NewDisk(rng.New(1), sim.DiskConfig{})
	populate(t, d, []string{"a-0", "b-0", "b-1", "c-0"}, 3)
	r := reclaim.New(reclaim.Config{Roots: roots, Dead: deadSet("b-0", "b-1")})
	r.Request(1)
	drive(r, d, 1, -1)
	if r.Busy() {
		t.Fatal("the pass did not end")
	}
	d.Crash()
	want := []string{"parts/a-0", "parts/c-0", "acks/a-0", "acks/c-0"}
	if got := dirsOf(t, d); !slices.Equal(got, want) {
		t.Fatalf("after the pass and a crash: %v, want %v", got, want)
	}
	if st := r.Stats(); st.DirsRemoved != 4 || st.FilesRemoved != 12 {
		t.Fatalf("stats %+v, want 4 directories and 12 files", st)
	}
	for p, b := range d.DurableFiles() {
		if string(b) != p {
			t.Fatalf("live file %s holds %q", p, b)
		}
	}
}

// flakyFS fails the first Remove with EIO.
type flakyFS struct {
	*sim.Disk
	failed bool
}

func (f *flakyFS) Remove(name string) error {
	if !f.failed {
		f.failed = true
		return fmt.Errorf("injected: %w", disk.ErrIO)
	}
	return f.Disk.Remove(name)
}

// A failed op ends the pass; it is made again RetryNs later and finishes.
func TestFailedPassIsMadeAgain(t *testing.T) {
	fs := &flakyFS{Disk: sim.NewDisk(rng.New(2), sim.DiskConfig{})}
	populate(t, fs, []string{"a-0", "b-0"}, 2)
	r := reclaim.New(reclaim.Config{Roots: roots, Dead: deadSet("b-0"), RetryNs: 500})
	r.Request(10)
	drive(r, fs, 10, -1)
	at, ok := r.NextDeadline()
	if !fs.failed || r.Busy() || !ok || at != 510 || r.Stats().FailedPasses != 1 {
		t.Fatalf("after EIO: busy %v, deadline %d %v, stats %+v", r.Busy(), at, ok, r.Stats())
	}
	r.Request(20) // asked again while waiting: the wait holds
	if len(r.Ready().Ops) != 0 {
		t.Fatal("a pass started before the retry wait ended")
	}
	r.Tick(510)
	drive(r, fs, 510, -1)
	if got := dirsOf(t, fs); !slices.Equal(got, []string{"parts/a-0", "acks/a-0"}) {
		t.Fatalf("after the retry: %v", got)
	}
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("a deadline is left after a good pass")
	}
}

// A directory that turns live before the reclaimer reaches it is left alone; a Request
// during a pass makes one more pass after it.
func TestDeadIsAskedAgainPerDirectory(t *testing.T) {
	d := sim.NewDisk(rng.New(3), sim.DiskConfig{})
	populate(t, d, []string{"a-0", "b-0"}, 1)
	dead := map[string]bool{"a-0": true, "b-0": true}
	r := reclaim.New(reclaim.Config{Roots: []string{"parts"}, Dead: func(_, n string) bool { return dead[n] }})
	dv := &driver{r: r, fs: d}
	r.Request(1)
	dv.run(1, 1) // the root listed: both taken
	dead["b-0"] = false
	r.Request(1)
	dv.run(1, -1)
	if got := dirsOf(t, d); !slices.Equal(got, []string{"parts/b-0", "acks/a-0", "acks/b-0"}) {
		t.Fatalf("got %v", got)
	}
	if st := r.Stats(); st.Passes != 2 {
		t.Fatalf("%d passes, want 2 (the Request during the first made one more)", st.Passes)
	}
}

// Property: whatever the directories, the dead set and where a crash cuts a pass, a new
// pass after the crash leaves exactly the live directories, each with every file and its
// bytes.
func TestPropertyCrashAnywhereThenPassLeavesExactlyTheLive(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := sim.NewDisk(rng.New(rapid.Uint64().Draw(rt, "seed")), sim.DiskConfig{CrashKeepProb: 0.5})
		n := rapid.IntRange(0, 6).Draw(rt, "dirs")
		var names, deadNames []string
		for i := range n {
			name := fmt.Sprintf("%016x-%d", i/2+1, i%2)
			names = append(names, name)
			if rapid.Bool().Draw(rt, "dead") {
				deadNames = append(deadNames, name)
			}
		}
		populate(rt, d, names, rapid.IntRange(0, 3).Draw(rt, "files"))
		before := d.DurableFiles()
		cfg := reclaim.Config{Roots: roots, Dead: deadSet(deadNames...)}
		r := reclaim.New(cfg)
		r.Request(1)
		drive(r, d, 1, rapid.IntRange(0, 40).Draw(rt, "opsBeforeCrash"))
		d.Crash()
		r = reclaim.New(cfg)
		r.Request(2)
		drive(r, d, 2, -1)
		d.Crash()
		after := d.DurableFiles()
		for p, b := range before {
			dir := p[strings.Index(p, "/")+1 : strings.LastIndex(p, "/")]
			live := !slices.Contains(deadNames, dir)
			if got, ok := after[p]; live && (!ok || string(got) != string(b)) {
				rt.Fatalf("live file %s lost or changed", p)
			} else if !live && ok {
				rt.Fatalf("dead file %s still there", p)
			}
		}
		if extra := slices.DeleteFunc(slices.Collect(maps.Keys(after)), func(p string) bool { _, ok := before[p]; return ok }); len(extra) > 0 {
			rt.Fatalf("files appeared: %v", extra)
		}
		for _, dir := range dirsOf(rt, d) {
			if slices.Contains(deadNames, dir[strings.Index(dir, "/")+1:]) {
				rt.Fatalf("dead directory %s listed", dir)
			}
		}
	})
}

// An unknown completion is a programmer error.
func TestCompletionOfNoOpPanics(t *testing.T) {
	r := reclaim.New(reclaim.Config{Roots: roots, Dead: deadSet()})
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "reclaim:") {
			t.Fatalf("recovered %v", p)
		}
	}()
	r.DiskDone(1, disk.Result{ID: 7, Err: errors.New("x")})
}
