//go:build !narad_mut_removeearly

package node

const mutRemoveEarly = false
