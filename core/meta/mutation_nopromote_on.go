//go:build narad_mut_nopromote

package meta

// mutNoPromote plants a bug (Makefile MUTATIONS): learners are never made voters, so a
// cluster grown from one node keeps one voter. The cluster simulator's voters check sees
// it.
const mutNoPromote = true
