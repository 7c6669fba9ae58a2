// Package assert is the one helper core packages use to state an invariant (STYLE.md,
// point 4): a broken invariant is a programmer error and panics, in production too, with
// the package and the rule in the message. It has no state and does no I/O.
//
//	assert.That(len(q) <= QueueMax, "wal: queue over its bound")
package assert

import "fmt"

// That panics with msg, prefixed "invariant broken: ", when ok is false. msg should start
// with the package name ("wal: ...") and be a constant: building it costs even when ok.
func That(ok bool, msg string) {
	if !ok {
		panic("invariant broken: " + msg)
	}
}

// Fail panics with msg, prefixed "invariant broken: ": for a branch that must never run.
func Fail(msg string) { panic("invariant broken: " + msg) }

// Failf is Fail with a message built from format and args, which only a broken invariant
// pays for (the one place a message may carry values).
func Failf(format string, args ...any) {
	panic("invariant broken: " + fmt.Sprintf(format, args...))
}
