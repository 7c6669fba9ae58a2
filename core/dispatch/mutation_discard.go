//go:build narad_mut_discardnoconfirm && !narad_mut_ckptpastskip

package dispatch

// Mutation: discard a record as soon as its topic looks absent, locally or to the owner
// that refused its commit, without the leader's confirmation.
const (
	mutDiscardWithoutConfirm = true
	mutCheckpointPastSkipped = false
	mutCheckpointBeforeAck   = false
	mutRerouteInflight       = false
)
