//go:build narad_mut_rerouteinflight && !narad_mut_discardnoconfirm && !narad_mut_ckptpastskip && !narad_mut_ckptearly

package dispatch

// Mutation: reroute a stuck partition's records including those whose commit is still
// in flight (the commit is forgotten, as if it had timed out).
const (
	mutDiscardWithoutConfirm = false
	mutCheckpointPastSkipped = false
	mutCheckpointBeforeAck   = false
	mutRerouteInflight       = true
)
