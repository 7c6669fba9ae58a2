//go:build narad_mut_ckptpastskip

package dispatch

// Mutation: advance the checkpoint past a skipped (waiting or in-flight) record when
// later records are done.
const (
	mutDiscardWithoutConfirm = false
	mutCheckpointPastSkipped = true
	mutCheckpointBeforeAck   = false
	mutRerouteInflight       = false
)
