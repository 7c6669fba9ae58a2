//go:build !narad_mut_drainplace

package meta

const mutDrainPlace = false
