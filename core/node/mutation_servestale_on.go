//go:build narad_mut_servestale

package node

// mutServeStale plants a bug (Makefile MUTATIONS): a partition given back to this node by
// a forget's reassignment is served from the older copy this node still holds (a move's
// source whose release was pending), continuing its offsets under the new epoch.
const mutServeStale = true
