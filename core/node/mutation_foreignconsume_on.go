//go:build narad_mut_foreignconsume

package node

// Mutation: a routed consume delivers an owner's records whatever incarnation of the
// topic they belong to (consumeAnswer), as before cluster seed 108502 was fixed.
const mutForeignConsume = true
