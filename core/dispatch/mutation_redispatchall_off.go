//go:build !narad_mut_redispatchall

package dispatch

// mutRedispatchAll is a deliberate bug for the simulator's mutation check (see the _on file).
const mutRedispatchAll = false
