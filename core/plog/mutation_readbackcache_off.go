//go:build !narad_mut_readbackcache

package plog

// mutReadBackCache is the narad_mut_readbackcache mutation (see its _on file); false in
// every normal build.
const mutReadBackCache = false
