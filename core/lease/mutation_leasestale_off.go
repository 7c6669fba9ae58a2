//go:build !narad_mut_leasestale

package lease

// mutLeaseStale is off: see mutation_leasestale_on.go.
const mutLeaseStale = false
