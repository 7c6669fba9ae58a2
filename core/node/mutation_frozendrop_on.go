//go:build narad_mut_frozendrop

package node

// mutFrozenDrop plants a bug (Makefile MUTATIONS): a frozen partition answers the commits
// sent to it during the freeze OK without writing them (instead of asking for a retry).
const mutFrozenDrop = true
