//go:build !narad_mut_noforwarddedupe

package meta

const mutNoForwardDedupe = false
