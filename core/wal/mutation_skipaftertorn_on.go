//go:build narad_mut_skipaftertorn

package wal

// Mutation: recovery, resyncing past a damaged frame, skips the valid record that follows
// it.
const mutSkipAfterTorn = true
