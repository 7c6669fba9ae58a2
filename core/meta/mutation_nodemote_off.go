//go:build !narad_mut_nodemote

package meta

const mutNoDemote = false
