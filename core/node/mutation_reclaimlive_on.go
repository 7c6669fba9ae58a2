//go:build narad_mut_reclaimlive

package node

// Mutation: the reclaimer takes any partition directory that is not open for a deleted
// incarnation's: a live topic's partitions not yet opened since the start lose their files.
const mutReclaimLive = true
