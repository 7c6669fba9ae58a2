//go:build narad_mut_removeearly

package node

// mutRemoveEarly plants a bug (Makefile MUTATION_TESTS): a draining node proposes its
// removal while its dispatcher still holds records it answered 202, and stops with them
// in its WAL. TestDecommissionedNodeDeliversWhatItAccepted sees it.
const mutRemoveEarly = true
