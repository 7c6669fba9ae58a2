//go:build !narad_mut_reclaimlive

package node

// mutReclaimLive plants a bug for the simulator's mutation check (see the _on file).
const mutReclaimLive = false
