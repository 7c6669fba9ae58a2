//go:build !narad_mut_poisonnode

package node

// mutPoisonNode plants a bug for the simulator's mutation check (see the _on file).
const mutPoisonNode = false
