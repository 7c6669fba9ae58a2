//go:build !narad_mut_cutoverunverified

package node

const mutCutOverUnverified = false
