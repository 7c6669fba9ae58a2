//go:build narad_mut_zeroheader

package plog

// Mutation: recovery takes a zeroed frame header for never-written space (row R12) and
// ends the segment there, whatever follows: a zeroed frame in the middle of a segment
// loses the valid frames after it.
const mutZeroHeader = true
