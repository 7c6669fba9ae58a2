//go:build !narad_mut_importlost

package node

const mutImportLost = false
