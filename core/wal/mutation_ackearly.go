//go:build narad_mut_ackearly

package wal

// Mutation: answer appends when their write completes, before the fdatasync.
const (
	mutAckBeforeSync   = true
	mutTrustFailedSync = false
)
