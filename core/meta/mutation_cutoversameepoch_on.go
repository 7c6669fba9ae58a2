//go:build narad_mut_cutoversameepoch

package meta

// mutCutOverSameEpoch plants a bug (Makefile MUTATIONS): a cutover gives the partition
// to its destination under the same epoch, so two owners hold one epoch and the fence
// that keeps the old one from committing is gone. The metastore check moves sees it.
const mutCutOverSameEpoch = true
