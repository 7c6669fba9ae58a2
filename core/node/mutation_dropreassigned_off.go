//go:build !narad_mut_dropreassigned

package node

const mutDropReassigned = false
