//go:build !narad_mut_skipaftertorn

package wal

// mutSkipAfterTorn is a deliberate bug for the simulator's mutation check (see
// mutation_skipaftertorn_on.go); false in a normal build.
const mutSkipAfterTorn = false
