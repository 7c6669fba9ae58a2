//go:build !narad_mut_nacksettle

package lease

// mutNackSettle is off: see mutation_nacksettle_on.go.
const mutNackSettle = false
