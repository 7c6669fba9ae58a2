//go:build !narad_mut_foreignconsume

package node

// mutForeignConsume plants a bug for the simulator's mutation check (see the _on file).
const mutForeignConsume = false
