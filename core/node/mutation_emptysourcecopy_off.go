//go:build !narad_mut_emptysourcecopy

package node

// mutEmptySourceCopy plants a bug for the simulator's mutation check (see the _on file).
const mutEmptySourceCopy = false
