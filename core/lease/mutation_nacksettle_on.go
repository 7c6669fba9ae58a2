//go:build narad_mut_nacksettle

package lease

// mutNackSettle plants a bug (Makefile MUTATIONS): a nack or an expired lease settles its
// record (in memory) instead of releasing it, so it is never delivered again by this
// process. nodesim catches it as invariant 9.
const mutNackSettle = true
