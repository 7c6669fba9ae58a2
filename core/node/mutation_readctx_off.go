//go:build !narad_mut_readctx

package node

const mutReadCtx = false
