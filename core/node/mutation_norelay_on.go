//go:build narad_mut_norelay

package node

// mutNoRelay plants a bug (Makefile MUTATIONS): a joiner's heartbeats are not relayed to
// a leader it does not know, so once leadership moves to a promoted learner the joiners
// are never seen and never become voters. The cluster simulator's voters check sees it.
const mutNoRelay = true
