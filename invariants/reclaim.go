package invariants

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Reclaimed files (issue 13, point 6): a node removes the partition directories of a
// deleted incarnation (core/reclaim). These helpers let a simulator read a node's disk
// for the check "reclaim": which incarnation a directory is of, which directories of
// deleted incarnations are left, and a bounded wait, after the heal, until none is.

// PartitionRoots are the directories under which a node keeps one directory per
// partition of an incarnation, named by the incarnation in 16 hexadecimal digits, a
// hyphen and the partition.
var PartitionRoots = []string{"parts", "acks"}

// ReclaimBoundNs bounds how long after the heal a node may take to remove what deleted
// incarnations left: a pass after a failed op waits 1 s (reclaim.DefaultRetryNs), one
// put off for ops in flight waits for their completion.
const ReclaimBoundNs = 5_000_000_000

// reclaimLookNs is how often, in simulated time, AwaitReclaimed looks at the disks.
const reclaimLookNs = 100_000_000

// IncarnationOf reads the incarnation of a path under a partition root (the root, a
// slash, the directory's name, and optionally more).
func IncarnationOf(name string) (uint64, bool) {
	root, rest, ok := strings.Cut(name, "/")
	if !ok || !isPartitionRoot(root) || len(rest) < 17 || rest[16] != '-' {
		return 0, false
	}
	id, err := strconv.ParseUint(rest[:16], 16, 64)
	return id, err == nil
}

func isPartitionRoot(root string) bool {
	for _, r := range PartitionRoots {
		if r == root {
			return true
		}
	}
	return false
}

// DirLister is the part of a disk the check reads.
type DirLister interface {
	ListDirs(dir string) ([]string, error)
}

// LeftDirs lists the directories under the partition roots of d whose incarnation
// deleted says is deleted.
func LeftDirs(d DirLister, deleted func(id uint64) bool) []string {
	var out []string
	for _, root := range PartitionRoots {
		names, _ := d.ListDirs(root)
		for _, name := range names {
			p := path.Join(root, name)
			if id, ok := IncarnationOf(p + "/"); ok && deleted(id) {
				out = append(out, p)
			}
		}
	}
	return out
}

// AwaitReclaimed runs a healed simulation until nothing is left, for at most
// ReclaimBoundNs of simulated time: step runs its next event (false when there is none
// or the run failed), left lists what is left (false when it cannot look now, a node
// being down). The error names what is left after the bound.
func AwaitReclaimed(now func() int64, step func() bool, left func() ([]string, bool)) error {
	if dirs := AwaitNone(now, step, left, ReclaimBoundNs); len(dirs) > 0 {
		return fmt.Errorf("reclaim: %d directories of deleted incarnations left %d s after the heal: %v",
			len(dirs), ReclaimBoundNs/1_000_000_000, dirs[:min(len(dirs), 5)])
	}
	return nil
}

// AwaitNone runs a healed simulation until left lists nothing, looking every
// reclaimLookNs of simulated time, for at most boundNs: step runs its next event (false
// when there is none or the run failed), left lists what is still there (false when it
// cannot look now). It returns what is left after the bound, or nil.
func AwaitNone(now func() int64, step func() bool, left func() ([]string, bool), boundNs int64) []string {
	start, nextLook := now(), now()
	for {
		if now() >= nextLook {
			names, ok := left()
			switch {
			case ok && len(names) == 0:
				return nil
			case ok && now()-start > boundNs:
				return names
			case ok:
				nextLook = now() + reclaimLookNs
			}
		}
		if !step() {
			return nil
		}
	}
}
