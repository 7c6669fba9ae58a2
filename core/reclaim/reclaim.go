package reclaim

import (
	"errors"
	"path"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// DirsPerPassMax bounds the dead directories one pass removes; the rest wait for the
// next pass, made at once.
const DirsPerPassMax = 1024

// DefaultRetryNs is the wait before a pass that failed is made again.
const DefaultRetryNs = 1_000_000_000

// Config sets up a Reclaimer.
type Config struct {
	// Roots are the directories whose subdirectories are partition directories.
	Roots []string
	// Dead reports whether directory name under root belongs to nobody (see doc.go).
	Dead func(root, name string) bool
	// RetryNs: the wait before a failed pass is made again; default DefaultRetryNs.
	RetryNs int64
}

// Ready is the Reclaimer's output since the last call.
type Ready struct {
	Ops     []disk.Op
	Removed []string // directories removed for good (their root synced) since the last call
}

// Stats counts what the Reclaimer did.
type Stats struct {
	Passes, FailedPasses uint64
	DirsRemoved          uint64
	FilesRemoved         uint64
}

// step is what the op in flight does.
type step uint8

const (
	stepIdle step = iota
	stepListRoot
	stepListDir
	stepRemoveFile
	stepSyncDir
	stepRemoveDir
	stepSyncRoot
)

// Reclaimer removes dead partition directories, one op at a time.
type Reclaimer struct {
	cfg       Config
	out       Ready
	stats     Stats
	wanted    bool  // a pass is asked for
	retryAtNs int64 // a failed pass is made again then (0: none waiting)
	nextOpID  uint64

	// The pass in flight.
	step    step
	opID    uint64
	root    int      // index in cfg.Roots
	dirs    []string // dead directories of the root, not yet done
	dir     string   // the directory being removed (root/name)
	files   []string // its files left to remove
	taken   int      // dead directories the pass took, over its roots
	partial bool     // the pass found more than DirsPerPassMax
}

// New returns an idle Reclaimer.
func New(cfg Config) *Reclaimer {
	assert.That(cfg.Dead != nil, "reclaim: Config.Dead is required")
	if cfg.RetryNs <= 0 {
		cfg.RetryNs = DefaultRetryNs
	}
	return &Reclaimer{cfg: cfg}
}

// Request asks for a pass: at once if none is running, else when the running one ends.
func (r *Reclaimer) Request(nowNs int64) {
	r.wanted = true
	r.maybeStart(nowNs)
}

// Ready returns the output since the last call and clears it.
func (r *Reclaimer) Ready() Ready {
	rd := r.out
	r.out = Ready{}
	return rd
}

// Stats returns the counts so far.
func (r *Reclaimer) Stats() Stats { return r.stats }

// Busy reports whether a pass is running.
func (r *Reclaimer) Busy() bool { return r.step != stepIdle }

// NextDeadline is when a failed pass is made again.
func (r *Reclaimer) NextDeadline() (int64, bool) { return r.retryAtNs, r.retryAtNs != 0 }

// Tick makes a failed pass again once its wait is over.
func (r *Reclaimer) Tick(nowNs int64) {
	if r.retryAtNs != 0 && nowNs >= r.retryAtNs {
		r.retryAtNs = 0
		r.wanted = true
	}
	r.maybeStart(nowNs)
}

func (r *Reclaimer) maybeStart(nowNs int64) {
	if r.step != stepIdle || !r.wanted || r.retryAtNs != 0 || len(r.cfg.Roots) == 0 {
		return
	}
	r.wanted, r.partial, r.root, r.dirs, r.taken = false, false, 0, nil, 0
	r.stats.Passes++
	r.listRoot()
}

// DiskDone takes the completion of the op in flight.
func (r *Reclaimer) DiskDone(nowNs int64, res disk.Result) {
	assert.That(r.step != stepIdle && res.ID == r.opID, "reclaim: completion of an op not in flight")
	if err := res.Err; err != nil && !r.tolerated(err) {
		r.fail(nowNs)
		return
	}
	switch r.step {
	case stepListRoot:
		r.onRootListed(res.Names)
	case stepListDir:
		r.files = res.Names
		r.removeNextFile()
	case stepRemoveFile:
		r.stats.FilesRemoved++
		r.removeNextFile()
	case stepSyncDir:
		r.issue(stepRemoveDir, disk.Op{Kind: disk.KindRemoveDir, Name: r.dir})
	case stepRemoveDir:
		r.issue(stepSyncRoot, disk.Op{Kind: disk.KindSyncDir, Name: r.cfg.Roots[r.root]})
	case stepSyncRoot:
		r.stats.DirsRemoved++
		r.out.Removed = append(r.out.Removed, r.dir)
		r.nextDir()
	}
	if r.step == stepIdle {
		r.maybeStart(nowNs)
	}
}

// tolerated: a file or directory already gone is what a removal wants (an earlier
// process removed it, or the simulated disk dropped an empty directory by itself).
func (r *Reclaimer) tolerated(err error) bool {
	return errors.Is(err, disk.ErrNotExist) && (r.step == stepRemoveFile || r.step == stepRemoveDir)
}

func (r *Reclaimer) fail(nowNs int64) {
	r.stats.FailedPasses++
	r.step, r.dirs, r.files = stepIdle, nil, nil
	r.retryAtNs = nowNs + r.cfg.RetryNs
}

func (r *Reclaimer) listRoot() {
	r.issue(stepListRoot, disk.Op{Kind: disk.KindListDirs, Name: r.cfg.Roots[r.root]})
}

func (r *Reclaimer) onRootListed(names []string) {
	root := r.cfg.Roots[r.root]
	for _, name := range names {
		if !r.cfg.Dead(root, name) {
			continue
		}
		if r.taken == DirsPerPassMax {
			r.partial = true // the next pass, made at once, takes the rest
			break
		}
		r.dirs = append(r.dirs, name)
		r.taken++
	}
	r.nextDir()
}

// nextDir starts on the next dead directory of the root, or the next root, or ends the
// pass (asking for another if it left directories behind).
func (r *Reclaimer) nextDir() {
	root := r.cfg.Roots[r.root]
	for len(r.dirs) > 0 {
		name := r.dirs[0]
		r.dirs = r.dirs[1:]
		if !r.cfg.Dead(root, name) {
			continue
		}
		r.dir = path.Join(root, name)
		r.issue(stepListDir, disk.Op{Kind: disk.KindList, Name: r.dir})
		return
	}
	if r.root++; r.root < len(r.cfg.Roots) {
		r.listRoot()
		return
	}
	r.step = stepIdle
	r.wanted = r.wanted || r.partial
}

func (r *Reclaimer) removeNextFile() {
	if len(r.files) == 0 {
		r.issue(stepSyncDir, disk.Op{Kind: disk.KindSyncDir, Name: r.dir})
		return
	}
	name := path.Join(r.dir, r.files[0])
	r.files = r.files[1:]
	r.issue(stepRemoveFile, disk.Op{Kind: disk.KindRemove, Name: name})
}

func (r *Reclaimer) issue(s step, op disk.Op) {
	r.nextOpID++
	r.step, r.opID, op.ID = s, r.nextOpID, r.nextOpID
	r.out.Ops = append(r.out.Ops, op)
}
