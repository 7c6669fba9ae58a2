//go:build !narad_mut_keepforgotten

package meta

const mutKeepForgotten = false
