//go:build narad_mut_acksnotdurable

package lease

// Mutation: the batched ack flush writes nothing to acks.log yet reports the acks durable
// (Stats.AcksDurable, Flushed), so a clean stop no longer waits and after any restart every
// acked record of the partition is delivered again.
const mutAcksNotDurable = true
