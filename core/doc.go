// Package core holds narad's deterministic state machines. Each subpackage is driven by
// events in, actions out: a machine receives a client request, a timer firing, a disk or
// network completion, and answers with the file operations, messages, timers and replies a
// shell must perform. The core starts no goroutine, reads no clock, does no I/O and draws
// randomness only from a seeded source passed in, so the same seed gives the same run byte
// for byte (DESIGN.md section 2). TestDeterminism enforces those rules on every non-test
// file below this directory.
package core
