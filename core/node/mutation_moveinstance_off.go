//go:build !narad_mut_moveinstance

package node

// mutMoveInstance plants a bug for the simulator's mutation check (see the _on file).
const mutMoveInstance = false
