//go:build !narad_mut_noreopen

package node

// mutNoReopen plants a bug for the simulator's mutation check (see the _on file).
const mutNoReopen = false
