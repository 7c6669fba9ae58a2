package clustersim

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/narad/narad/core/disk"
)

// Reclaimed files (issue 13, point 6). A node removes the partition directories of a
// deleted incarnation (core/reclaim). Checked (check name "reclaim"):
//   - a directory removed under "parts" or "acks" (RemoveDir: only the reclaimer removes
//     directories; the partitions remove files of their own) is of an incarnation no
//     replica holds at or past the remover's applied index: a replica that has applied as far and still holds it
//     proves the remover cannot have seen it deleted (the main topic is never deleted);
//   - after the heal, within ReclaimBoundNs, no node holds a directory of an incarnation
//     its replica deleted.

// ReclaimBoundNs bounds how long after the heal's deliveries the nodes may take to
// remove what deleted incarnations left: a pass put off by a failed op waits 1 s
// (reclaim.DefaultRetryNs), one put off for ops in flight waits for their completion.
const ReclaimBoundNs = 5_000_000_000

// partitionRoots are core/node's roots of partition directories.
var partitionRoots = []string{"parts", "acks"}

// incarnationOf reads the incarnation of a path under a partition root.
func incarnationOf(name string) (uint64, bool) {
	root, rest, ok := strings.Cut(name, "/")
	if !ok || (root != "parts" && root != "acks") || len(rest) < 17 || rest[16] != '-' {
		return 0, false
	}
	id, err := strconv.ParseUint(rest[:16], 16, 64)
	return id, err == nil
}

// checkRemoval holds a removal node mb issues to the rule above.
func (u *run) checkRemoval(mb *member, op disk.Op) {
	if op.Kind != disk.KindRemoveDir {
		return
	}
	id, ok := incarnationOf(op.Name)
	if !ok {
		return
	}
	u.stats.ReclaimChecks++ // directories removed, checked
	if id == u.topicID {
		u.violate(fmt.Errorf("reclaim: node %d removed %s of the main topic's incarnation %d, never deleted", mb.id, op.Name, id))
		return
	}
	applied := mb.n.MetastoreApplied()
	for _, o := range u.members {
		if o.up && o.n.MetastoreApplied() >= applied && o.n.IncarnationHeld(id) {
			u.violate(fmt.Errorf("reclaim: node %d removed %s of incarnation %d at metastore index %d; node %d's replica holds it at index %d", mb.id, op.Name, id, applied, o.id, o.n.MetastoreApplied()))
			return
		}
	}
}

// leftovers lists the directories of deleted incarnations on the up nodes' disks.
func (u *run) leftovers() []string {
	var out []string
	for _, mb := range u.members {
		if !mb.up {
			continue
		}
		for _, root := range partitionRoots {
			names, _ := mb.d.ListDirs(root)
			for _, name := range names {
				p := path.Join(root, name)
				if id, ok := incarnationOf(p + "/"); ok && mb.n.IncarnationDeleted(id) {
					out = append(out, fmt.Sprintf("n%d:%s", mb.id, p))
				}
			}
		}
	}
	return out
}

// awaitReclaimed runs the healed cluster until no node holds a directory of a deleted
// incarnation, for at most ReclaimBoundNs.
func (u *run) awaitReclaimed() {
	start, nextLook := u.s.Now(), u.s.Now()
	for u.err == nil {
		if u.s.Now() >= nextLook {
			left := u.leftovers()
			if len(left) == 0 {
				return
			}
			if u.s.Now()-start > ReclaimBoundNs {
				u.violate(fmt.Errorf("reclaim: %d directories of deleted incarnations left %d s after the heal: %v", len(left), ReclaimBoundNs/1_000_000_000, left[:min(len(left), 5)]))
				return
			}
			nextLook = u.s.Now() + 100_000_000
		}
		e, ok := u.s.Next()
		if !ok {
			return
		}
		u.step(e)
	}
}
