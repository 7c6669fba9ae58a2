//go:build !narad_mut_reopentail

package plog

// mutReopenTail plants a bug for the simulator's mutation check (see the _on file).
const mutReopenTail = false
