// Package nodeshell runs a core node (core/node) on real files with a real clock: it is
// the daemon's shell of DESIGN.md section 1, and it implements the HTTP layer's Broker.
//
// Every call into the core (a client request, a disk completion, a timer) happens under
// one mutex; the actions the core returns are carried out after the mutex is released:
// disk ops go to an io/disk Executor, responses to the goroutines waiting for them. The
// clock is read here and passed into the core as a value. Nothing in the core blocks, so
// the mutex is held only for bookkeeping: producers arriving during a WAL fdatasync stage
// their records and join the next group commit. A step holds a read lock from its
// decision to submit ops until they are submitted; Close takes the write lock before it
// stops the executor, so no op is submitted to a closed executor.
package nodeshell
