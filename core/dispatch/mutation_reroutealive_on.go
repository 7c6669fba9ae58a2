//go:build narad_mut_reroutealive

package dispatch

// Mutation: the rule before issue 13 (point 8): a partition whose last 3 commits failed is
// rerouted though membership calls its owner alive.
const mutRerouteAlive = true
