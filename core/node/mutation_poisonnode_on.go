//go:build narad_mut_poisonnode

package node

// Mutation: a partition's failure fails the whole node (the behaviour before issue 13,
// point 4): every other partition stops with it, until a restart.
const mutPoisonNode = true
