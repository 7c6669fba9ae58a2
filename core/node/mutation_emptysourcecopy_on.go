//go:build narad_mut_emptysourcecopy

package node

// Mutation: a move's copy whose source's log is empty and starts past the copy's end
// (the source reopened it at its epoch's base) goes on fetching: no batch ever brings
// the copy to the source's high-watermark, and the move stays frozen for ever.
const mutEmptySourceCopy = true
