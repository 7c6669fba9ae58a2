//go:build !narad_mut_walzeroheader

package wal

// mutZeroHeader plants a bug for the mutation check (see the _on file).
const mutZeroHeader = false
