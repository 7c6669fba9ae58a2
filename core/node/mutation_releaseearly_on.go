//go:build narad_mut_releaseearly

package node

// mutReleaseEarly plants a bug (Makefile MUTATIONS): a move's source drops its copy and
// removes its files once its replica holds the move frozen, before the cutover is
// committed (and before the new owner serves).
const mutReleaseEarly = true
