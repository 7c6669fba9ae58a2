//go:build !narad_mut_nopromote

package meta

const mutNoPromote = false
