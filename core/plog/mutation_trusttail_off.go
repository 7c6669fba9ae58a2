//go:build !narad_mut_trusttail

package plog

// mutTrustTail is a deliberate bug for the simulator's mutation check (see
// mutation_trusttail_on.go); false in a normal build.
const mutTrustTail = false
