//go:build narad_mut_walzeroheader

package wal

// Mutation: recovery takes a zeroed frame header for never-written space (row R10) and
// ends the segment there, whatever follows: a zeroed frame in the middle of a segment
// loses the valid records after it.
const mutZeroHeader = true
