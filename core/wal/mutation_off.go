//go:build !narad_mut_ackearly && !narad_mut_trustsync

package wal

// Deliberate bugs for the simulator's mutation check (see cmd/narad-sim and Makefile
// target mutation). Each is switched on by its build tag in a sibling file; in every
// normal build both are false.
const (
	mutAckBeforeSync   = false
	mutTrustFailedSync = false
)
