//go:build narad_mut_sendfailsilent

package node

// mutSendFailSilent plants a bug for the simulator to catch: a send that failed at the
// sender is not reported to the dispatcher, whose commit then waits for its timeout.
const mutSendFailSilent = true
