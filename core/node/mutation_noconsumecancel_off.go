//go:build !narad_mut_noconsumecancel

package node

const mutNoConsumeCancel = false
