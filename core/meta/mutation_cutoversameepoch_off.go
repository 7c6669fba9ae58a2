//go:build !narad_mut_cutoversameepoch

package meta

const mutCutOverSameEpoch = false
