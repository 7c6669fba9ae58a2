//go:build !narad_mut_cachestale

package auth

// mutCacheStale plants a bug for the simulator's mutation check (see the _on file).
const mutCacheStale = false
