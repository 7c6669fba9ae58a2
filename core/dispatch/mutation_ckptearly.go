//go:build narad_mut_ckptearly && !narad_mut_ckptpastskip && !narad_mut_discardnoconfirm

package dispatch

// Mutation: advance the checkpoint over records whose commit is still in flight, as if
// it had been acknowledged (narad-sim must catch it: a crash then loses them).
const (
	mutDiscardWithoutConfirm = false
	mutCheckpointPastSkipped = false
	mutCheckpointBeforeAck   = true
	mutRerouteInflight       = false
)
