// Package reclaim removes the files of deleted topic incarnations: each partition of an
// incarnation has a directory under each of the node's partition roots ("parts" for its
// log, "acks" for its acks), and once the metastore replica has applied the delete,
// nothing will ever open them again. It is a deterministic state machine: it does no I/O,
// reads no clock and starts no goroutine (DESIGN.md sections 1, 2, 6).
//
// # Driving it
//
//	r := reclaim.New(reclaim.Config{Roots: []string{"parts", "acks"}, Dead: dead})
//	r.Request(now)                      // at the start, and whenever a delete is applied
//	for {
//		rd := r.Ready()
//		for _, op := range rd.Ops { shell.Submit(op) } // one at a time: each waits for the last
//		switch ev := <-events; {
//		case completion: r.DiskDone(now, result)
//		case timer:      r.Tick(now)          // at r.NextDeadline(): a failed pass again
//		}
//	}
//
// Config.Dead decides, for a directory name found under a root, whether its files belong
// to nobody. The node answers from its replica: an incarnation whose id (the raft index
// that created it) is at or below the applied index and that the replica no longer holds
// was deleted, and ids only grow, so the answer never turns back to false. A name Dead
// does not recognise is left alone.
//
// # A pass
//
// For each root: ListDirs, then for each dead directory, one at a time: List, Remove each
// file, SyncDir of the directory (the removals are durable), RemoveDir, SyncDir of the
// root (the directory is gone for good). Dead is asked again before each directory. A
// crash anywhere leaves a directory of a deleted incarnation with fewer files, which the
// next pass (every start makes one) finishes: nothing opens it meanwhile. A failed op
// (EIO, a directory that is not empty because something wrote there) ends the pass; it
// is made again RetryNs later. A pass looks at no more than DirsPerPassMax directories;
// if it found more it is made again at once.
package reclaim
