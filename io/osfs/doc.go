// Package disk is Narad's real disk shell: it performs the core's disk actions on real
// files. Callers import it under an alias, since core/disk has the same name:
//
//	import "github.com/narad/narad/io/osfs"
//
// Two pieces:
//
//   - Dir implements core/disk.FS over a data directory, honouring the contract written on
//     each core/disk Kind. It caches one O_RDWR descriptor per file, so the hot path (write,
//     fdatasync, read-back) does no open and no allocation beyond the read buffer.
//   - Executor runs Ops on a small goroutine pool and hands back each Result.
//
// # How a shell uses it
//
// The core never touches a file: it emits Ops as actions, and a Result comes back to it as
// an event. A shell wires the two with one channel:
//
//	dir, err := osfs.Open(dataDir)
//	results := make(chan disk.Result, osfs.QueueSize+workers)
//	ex := osfs.NewExecutor(dir, workers, func(r disk.Result) { results <- r })
//	for {
//		for _, op := range node.DiskOps() { ex.Submit(op) } // actions out
//		select {
//		case r := <-results: node.Step(DiskDone{r})      // events in
//		// ... client requests, timers, network messages
//		}
//	}
//	// shutdown: ex.Close() (drains and delivers every submitted op), then dir.Close().
//
// Ops in flight run concurrently and complete in any order; when one op must follow another
// (write before sync, sync before ack) the core submits the second after the first's Result
// arrived. Sizing the results channel for QueueSize+workers means a worker never waits on
// the loop while the loop waits on Submit.
//
// # Durability
//
//   - Sync is fdatasync, never fsync: it makes a file's data and size durable, which is all
//     the core needs, and skips the mtime update. Pre-size segments (overwriting allocated
//     blocks costs about half an append; see DESIGN.md section 7).
//   - A failed fdatasync poisons the file: Linux reports a writeback error once and then
//     marks the pages clean, so a retried sync would "succeed" over lost data. The core treats
//     the failure as fatal for the file; the Dir also refuses, with ErrIO and ErrPoisoned,
//     every later WriteAt and Sync of that file until Create recreates it. A failed
//     fdatasync is always reported as ErrIO, even when the kernel says ENOSPC.
//   - Directory entries (create, rename, remove) are durable only after an fsync of the
//     directory; that is the core's job, through SyncDir. The one exception is a directory
//     Create makes because the file's parent is missing: Create fsyncs the directory that
//     holds each directory it makes, so the core only has to SyncDir the file's parent.
//     Open likewise fsyncs the parent of a root it creates.
//   - ReadDevice (an Op with Device set) is the read-back after a sync: it reads the
//     4096-aligned range covering the request through a second descriptor opened with
//     O_DIRECT into an aligned buffer, so it sees the device, not the page cache. Where
//     the file system refuses O_DIRECT (EINVAL, e.g. tmpfs) it falls back to
//     posix_fadvise(POSIX_FADV_DONTNEED) over the range, then a normal read: clean pages
//     are dropped and read from the device again; on tmpfs the cache is the storage, so
//     there the read-back proves only the cache.
//   - WriteAt reports ENOSPC and EDQUOT as ErrNoSpace. The contract says "nothing written";
//     a real file system may have stored a prefix of the data before filling up, so the
//     range written is undefined (never acknowledged) rather than untouched.
//
// # Names
//
// Names are slash-separated paths relative to the root. Absolute names and names with a
// ".." element are refused (ErrIO and ErrInvalidName) and never reach the OS. The check is
// lexical: a symlink an operator puts inside the root (say wal/ on another device) is
// followed on purpose.
//
// Handles stay open until the file is removed or renamed over, or the Dir is closed; a
// node keeps a bounded number of segments, so the cache is not evicted.
package osfs
