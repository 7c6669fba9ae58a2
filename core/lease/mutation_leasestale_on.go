//go:build narad_mut_leasestale

package lease

// mutLeaseStale plants a bug (Makefile MUTATIONS): a receipt handle is honoured while its
// offset is leased under any nonce, so the ack of a lease that expired settles the record
// after it went to another consumer. nodesim catches it as invariant 9.
const mutLeaseStale = true
