//go:build !narad_mut_frozendrop

package node

const mutFrozenDrop = false
