//go:build narad_mut_keepforgotten

package meta

// mutKeepForgotten plants a bug (Makefile MUTATIONS): the controller never removes a
// forgotten member from the raft configuration, so it keeps its vote for ever. The
// metastore simulator's forget check sees it.
const mutKeepForgotten = true
