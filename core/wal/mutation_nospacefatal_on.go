//go:build narad_mut_nospacefatal

package wal

// Mutation: a group write that finds no space fails the log (the behaviour before issue
// 13, point 5): a full device stops the node instead of refusing produces.
const mutNoSpaceFatal = true
