//go:build !narad_mut_removedtakes

package node

const mutRemovedTakes = false
