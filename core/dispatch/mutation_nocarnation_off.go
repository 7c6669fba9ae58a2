//go:build !narad_mut_nocarnation

package dispatch

// mutNoIncarnation plants a bug for the simulator's mutation check (see the _on file).
const mutNoIncarnation = false
