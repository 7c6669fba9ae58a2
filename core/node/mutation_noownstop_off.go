//go:build !narad_mut_noownstop

package node

const mutNoOwnStop = false
