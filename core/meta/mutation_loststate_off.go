//go:build !narad_mut_loststate

package meta

const mutLostState = false
