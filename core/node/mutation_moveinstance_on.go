//go:build narad_mut_moveinstance

package node

// Mutation: a move's destination takes a move of the partition at the same epoch and
// between the same members for the one it copies, whichever StartMove began it: after an
// abort and a new start applied together, the copy of the aborted move goes on with its
// freeze asked already, never asks it again, and the new move stays copying.
const mutMoveInstance = true
