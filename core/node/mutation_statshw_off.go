//go:build !narad_mut_statshw

package node

// mutStatsHW is off: see mutation_statshw_on.go.
const mutStatsHW = false
