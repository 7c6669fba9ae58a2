//go:build narad_mut_noforwarddedupe

package meta

// mutNoForwardDedupe plants a bug (Makefile MUTATION_TESTS): the apply admits every
// forwarded proposal, so a copy the network delivers again is applied again (a forwarded
// create applied after the topic's delete makes it again). TestForwardedCopyAppliedOnce
// sees it.
const mutNoForwardDedupe = true
