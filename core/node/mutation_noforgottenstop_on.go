//go:build narad_mut_noforgottenstop

package node

// mutNoForgottenStop plants a bug (Makefile MUTATION_TESTS): a member that hears a
// forgotten node's heartbeat does not tell it, so the node comes back and lingers with
// its stale copies instead of stopping. TestForgetDeadMember sees it.
const mutNoForgottenStop = true
