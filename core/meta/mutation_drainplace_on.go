//go:build narad_mut_drainplace

package meta

// mutDrainPlace plants a bug (Makefile MUTATIONS): a draining member takes new
// partitions like any live one, so a drain never ends while topics are created. The
// cluster check decommission sees the spare never removed.
const mutDrainPlace = true
