//go:build narad_mut_noownstop

package node

// mutNoOwnStop plants a bug (Makefile MUTATION_TESTS): a node whose own replica applies
// its forget goes on running; behind a one-way cut no member can tell it, so it keeps
// serving its stale copies. TestForgottenNodeBehindAOneWayCutStops sees it.
const mutNoOwnStop = true
