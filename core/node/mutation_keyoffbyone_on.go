//go:build narad_mut_keyoffbyone

package node

// mutKeyOffByOne plants a bug (Makefile MUTATIONS): the keyed partition choice is off by
// one (FNV-1a of the key plus one, modulo the partitions). nodesim catches it as
// invariant 8.
const mutKeyOffByOne = true
