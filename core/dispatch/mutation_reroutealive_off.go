//go:build !narad_mut_reroutealive

package dispatch

// mutRerouteAlive plants a bug for the simulator's mutation check (see the _on file).
const mutRerouteAlive = false
