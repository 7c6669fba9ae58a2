//go:build narad_mut_ackunanswered

package node

// mutAckUnanswered plants a bug (Makefile MUTATIONS): a routed ack whose owner never
// answered (the request or its answer lost) is answered OK to the client, though the
// owner may never have settled it. The cluster's invariant 9, narrowed to judge routed
// acks by their latest arrival at the owner, still sees the redelivery.
const mutAckUnanswered = true
