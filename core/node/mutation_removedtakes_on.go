//go:build narad_mut_removedtakes

package node

// mutRemovedTakes plants a bug (Makefile MUTATIONS): a removed node that still leads
// the metastore (handing its leadership on) takes produces, and stops with them in its
// WAL. Invariant 2 sees them lost (cluster seed 2669).
const mutRemovedTakes = true
