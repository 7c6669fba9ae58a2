//go:build !narad_mut_noquorumguard

package meta

const mutNoQuorumGuard = false
