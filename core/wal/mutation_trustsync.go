//go:build narad_mut_trustsync && !narad_mut_ackearly

package wal

// Mutation: ignore a failed fdatasync and answer its appends as durable.
const (
	mutAckBeforeSync   = false
	mutTrustFailedSync = true
)
