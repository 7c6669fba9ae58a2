//go:build narad_mut_ownernocheck

package node

// Mutation: the owner of a partition serves a routed consume or ack without checking the
// user's grant on its own replica (checkActor passes everyone): a grant revoked there but
// not yet on the node that took the request keeps working.
const mutOwnerNoCheck = true
