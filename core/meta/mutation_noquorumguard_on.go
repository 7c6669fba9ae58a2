//go:build narad_mut_noquorumguard

package meta

// mutNoQuorumGuard plants a bug (Makefile MUTATION_TESTS): a member's removal skips
// the quorum guard, so a change may leave the healthy voters without a quorum.
// TestDecommissionRefusedByTheQuorumGuard sees it.
const mutNoQuorumGuard = true
