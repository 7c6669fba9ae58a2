package clustersim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/invariants"
)

// Reclaimed files (issue 13, point 6). A node removes the partition directories of a
// deleted incarnation (core/reclaim). Checked (check name "reclaim"):
//   - a directory removed under "parts" or "acks" (RemoveDir: only the reclaimer removes
//     directories; the partitions remove files of their own) is of a partition the
//     remover's replica gives to another member (moved away, or about to be copied here),
//     or of an incarnation no replica holds at or past the remover's applied index: a
//     replica that has applied as far and still holds it proves the remover cannot have
//     seen it deleted (the main topic is never deleted);
//   - after the heal, within ReclaimBoundNs, no node holds a directory of an incarnation
//     its replica deleted (invariants.ReclaimBoundNs).

// checkRemoval holds a removal node mb issues to the rule above.
func (u *run) checkRemoval(mb *member, op disk.Op) {
	if op.Kind != disk.KindRemoveDir {
		return
	}
	id, ok := invariants.IncarnationOf(op.Name)
	if !ok {
		return
	}
	u.stats.ReclaimChecks++ // directories removed, checked
	if owner, ok := u.ownerAt(mb, op.Name, id); ok && (owner != mb.id || u.wipedAt(mb, op.Name, id)) {
		return // moved away, or an old copy removed before it is served here empty
	}
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

// ownerAt is the owner node mb's replica gives the partition of directory name (of
// incarnation id), if it knows one: a node removes the directory of a partition moved to
// another member (core/node moveserve.go), and one left by an earlier owner before it
// copies the partition in a move (move.go).
func (u *run) ownerAt(mb *member, name string, id uint64) (uint64, bool) {
	_, rest, _ := strings.Cut(name, "/")
	idx, err := strconv.ParseUint(rest[17:], 10, 32)
	if err != nil {
		return 0, false
	}
	return mb.n.PartitionOwner(id, uint32(idx))
}

// wipedAt reports whether node mb removes the files of the partition of directory name
// on purpose (node.PartitionWiped): a move's old copy (core/node move.go).
func (u *run) wipedAt(mb *member, name string, id uint64) bool {
	_, rest, _ := strings.Cut(name, "/")
	idx, err := strconv.ParseUint(rest[17:], 10, 32)
	return err == nil && mb.n.PartitionWiped(id, uint32(idx))
}

// awaitReclaimed runs the healed cluster until no up node holds a directory of an
// incarnation its replica deleted, for at most invariants.ReclaimBoundNs.
func (u *run) awaitReclaimed() {
	left := func() ([]string, bool) {
		var out []string
		for _, mb := range u.members {
			if mb.up {
				for _, dir := range invariants.LeftDirs(mb.d, mb.n.IncarnationDeleted) {
					out = append(out, fmt.Sprintf("n%d:%s", mb.id, dir))
				}
			}
		}
		return out, true
	}
	if err := invariants.AwaitReclaimed(u.s.Now, u.healStep, left); err != nil {
		u.violate(err)
	}
}

// healStep runs the healed cluster's next event: false when none is left or the run
// failed.
func (u *run) healStep() bool {
	e, ok := u.s.Next()
	if ok && u.err == nil {
		u.step(e)
	}
	return ok && u.err == nil
}
