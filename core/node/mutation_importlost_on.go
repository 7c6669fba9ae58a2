//go:build narad_mut_importlost

package node

// mutImportLost plants a bug (Makefile MUTATIONS): a move's destination whose partition
// was reopened after it imported the source's acks (a failed ack write poisons it) asks
// for the cutover all the same, its new lease manager without the acks that never
// reached its files: acked records are delivered again.
const mutImportLost = true
