//go:build !narad_mut_zeroheader

package plog

// mutZeroHeader plants a bug for the mutation check (see the _on file).
const mutZeroHeader = false
