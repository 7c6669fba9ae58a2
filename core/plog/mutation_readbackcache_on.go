//go:build narad_mut_readbackcache

package plog

// Mutation: the read-back after a sync is served from the page cache, which holds what
// was written whatever the device stored, so a silently corrupted, lost or misdirected
// write is answered durable. The node simulator must catch it.
const mutReadBackCache = true
