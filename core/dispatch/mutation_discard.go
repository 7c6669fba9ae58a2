//go:build narad_mut_discardnoconfirm && !narad_mut_ckptpastskip

package dispatch

// Mutation: discard a record as soon as its topic looks locally absent, without the
// leader's confirmation.
const (
	mutDiscardWithoutConfirm = true
	mutCheckpointPastSkipped = false
	mutCheckpointBeforeAck   = false
	mutRerouteInflight       = false
)
