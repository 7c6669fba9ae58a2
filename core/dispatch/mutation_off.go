//go:build !narad_mut_discardnoconfirm && !narad_mut_ckptpastskip

package dispatch

// Deliberate bugs for the simulator's mutation check; both false in a normal build.
const (
	mutDiscardWithoutConfirm = false
	mutCheckpointPastSkipped = false
)
