//go:build narad_mut_cachestale

package auth

// Mutation: a cached credential survives a change of its user's hash (cachedMatch does
// not compare the hash it was verified against), so an old password keeps working on a
// node after the new one applied there.
const mutCacheStale = true
