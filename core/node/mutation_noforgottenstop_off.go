//go:build !narad_mut_noforgottenstop

package node

const mutNoForgottenStop = false
