//go:build narad_mut_epochzero

package node

// mutEpochZero plants a bug (Makefile MUTATIONS): a partition reassigned by a forget
// starts its new epoch at offset 0, so its offsets name records the old copy had at the
// same offsets. The cluster simulator's checks of offsets see it.
const mutEpochZero = true
