//go:build narad_mut_readctx

package node

// mutReadCtx plants a bug (Makefile MUTATION_TESTS): every process numbers its metastore
// barriers from the same base, so a late read answer meant for an earlier process
// confirms a barrier of this one at a lower index.
// TestLateReadAnswerOfAnEarlierProcessConfirmsNothing sees it.
const mutReadCtx = true
