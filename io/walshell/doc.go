// Package walshell runs the core ingress WAL (core/wal) against real files: it is the
// thin shell of DESIGN.md section 1 for one machine. Callers on any goroutine call Append
// and block until their record is durable; disk ops run on an io/osfs Executor; deadlines
// run on a real timer; the wall clock is read here and passed into the core as a value.
//
// The core is single-threaded, so every call into it (an append, a disk completion, a
// timer) happens under one mutex, and the actions it returns are carried out after the
// mutex is released: ops go to the Executor, answers to the waiting callers. The mutex is
// held only for the core's bookkeeping (encoding a frame into the staging buffer), never
// across I/O, so appenders do not wait for a sync in progress to stage their record: they
// join the next group commit.
package walshell
