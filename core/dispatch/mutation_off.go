//go:build !narad_mut_discardnoconfirm && !narad_mut_ckptpastskip && !narad_mut_ckptearly && !narad_mut_rerouteinflight

package dispatch

// Deliberate bugs for the simulator's mutation check; all false in a normal build.
const (
	mutDiscardWithoutConfirm = false
	mutCheckpointPastSkipped = false
	mutCheckpointBeforeAck   = false
	mutRerouteInflight       = false
)
