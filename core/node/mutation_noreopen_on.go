//go:build narad_mut_noreopen

package node

// Mutation: a failed partition's reopen is put off for ever: it stays failed (its
// commits refused, its records rerouted, its prefix served) until the process restarts.
const mutNoReopen = true
