//go:build !narad_mut_notombstone

package meta

const mutNoTombstone = false
