//go:build narad_mut_skipreadback

package plog

// Mutation: publish a commit after its fdatasync without reading it back, so a silently
// corrupted write is acknowledged. The rapid and sim tests must catch it.
const mutSkipReadBack = true
