//go:build !narad_mut_applyearly

package meta

// mutApplyUncommitted is a deliberate bug for the simulator's mutation check (see
// mutation_applyearly_on.go); false in a normal build.
const mutApplyUncommitted = false
