//go:build !narad_mut_servestale

package node

const mutServeStale = false
