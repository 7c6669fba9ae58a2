//go:build narad_mut_reopentail

package plog

// Mutation: a reopened log ignores Config.VerifiedEnd and serves frames past its earlier
// machine's verified prefix: records of a commit answered failed (and sent again) are
// delivered twice.
const mutReopenTail = true
