//go:build !narad_mut_nospacefatal

package wal

// mutNoSpaceFatal plants a bug for the simulator's mutation check (see the _on file).
const mutNoSpaceFatal = false
