//go:build !narad_mut_ownernocheck

package node

// mutOwnerNoCheck plants a bug for the simulator's mutation check (see the _on file).
const mutOwnerNoCheck = false
