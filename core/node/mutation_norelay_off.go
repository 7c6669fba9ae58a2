//go:build !narad_mut_norelay

package node

const mutNoRelay = false
