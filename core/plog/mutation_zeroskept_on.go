//go:build narad_mut_zeroskept

package plog

// Mutation: a cut leaves the segment's zeros on the books although the truncate took
// them, so the commits after it write past the file's end without laying zeros again:
// every sync then commits metadata, the cost preallocation exists to avoid.
const mutZerosKept = true
