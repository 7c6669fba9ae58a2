//go:build narad_mut_readyearly

package node

// Mutation: /readyz trusts the replica's own commit index (the old rule): a restarted
// follower that knows the leader is ready before it has applied what it missed.
const mutReadyEarly = true
