//go:build narad_mut_noconsumecancel

package node

// mutNoConsumeCancel plants a bug (Makefile MUTATION_TESTS): a spread consume answered by
// one owner leaves its parts at the other owners waiting, and they lease records for it
// when records come, which the entry node only releases.
const mutNoConsumeCancel = true
