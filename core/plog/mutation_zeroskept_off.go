//go:build !narad_mut_zeroskept

package plog

// mutZerosKept plants a bug for the mutation check (see the _on file).
const mutZerosKept = false
