//go:build !narad_mut_epochzero

package node

const mutEpochZero = false
