//go:build !narad_mut_sendfailsilent

package node

// mutSendFailSilent: see mutation_sendfailsilent_on.go.
const mutSendFailSilent = false
