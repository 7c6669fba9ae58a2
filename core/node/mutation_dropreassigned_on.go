//go:build narad_mut_dropreassigned

package node

// mutDropReassigned plants a bug (Makefile MUTATIONS): a record accepted for a
// partition that a forget reassigned since is discarded as if its topic were gone,
// though this node's WAL still held it and a live owner could take it. The cluster
// simulator's given-up model owes it still, so invariant 2 sees the loss.
const mutDropReassigned = true
