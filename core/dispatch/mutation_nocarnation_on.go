//go:build narad_mut_nocarnation

package dispatch

// Mutation: the incarnation check removed at commit: the dispatcher and both commit
// paths take the topic by its name, so a deleted topic's records land in its namesake.
const mutNoIncarnation = true
