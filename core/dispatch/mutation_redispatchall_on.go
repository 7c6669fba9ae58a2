//go:build narad_mut_redispatchall

package dispatch

// Mutation: recovery ignores the skip-set recorded with the checkpoint and commits every
// record above the checkpoint again (the seed's memory-only skip-set).
const mutRedispatchAll = true
