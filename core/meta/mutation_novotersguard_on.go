//go:build narad_mut_novotersguard

package meta

// mutNoVotersGuard plants a bug (Makefile MUTATION_TESTS): the forget's voters guard
// is skipped, so a forget may leave fewer than 3 voters while 3 or more members remain.
// TestForgetGuards and TestForgetRefusedByTheVotersGuard see it.
const mutNoVotersGuard = true
