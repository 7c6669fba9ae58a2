//go:build narad_mut_loststate

package meta

// mutLostState plants a bug (Makefile MUTATION_TESTS): a replica that lost its durable
// state steps the leader's heartbeat into raft, which panics ("tocommit out of range").
// core/node's TestWipedMemberStopsAndTheClusterGoesOn sees it.
const mutLostState = true
