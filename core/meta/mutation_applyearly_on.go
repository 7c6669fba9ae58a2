//go:build narad_mut_applyearly

package meta

// Mutation: a replica applies log entries as soon as they are durable in its own log,
// before raft reports them committed.
const mutApplyUncommitted = true
