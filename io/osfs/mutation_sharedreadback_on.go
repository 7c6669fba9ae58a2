//go:build narad_mut_sharedreadback

package osfs

// Mutation: a read-back returns the pooled aligned buffer itself, not a copy: the next
// read-back of the same size class overwrites what an earlier caller still checks.
const mutSharedReadBack = true
