//go:build !narad_mut_localignored

package node

// mutLocalIgnored is off: see mutation_localignored_on.go.
const mutLocalIgnored = false
