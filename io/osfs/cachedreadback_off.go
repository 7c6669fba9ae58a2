//go:build !narad_bench_cachedreadback

package osfs

// benchCachedReadBack is false in every real build: ReadDevice reads the device.
const benchCachedReadBack = false
