//go:build !narad_mut_readyearly

package node

// mutReadyEarly plants a bug for the simulator's mutation check (see the _on file).
const mutReadyEarly = false
