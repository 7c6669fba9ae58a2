//go:build narad_bench_cachedreadback

package osfs

// benchCachedReadBack: a benchmark build (go build -tags narad_bench_cachedreadback) whose
// every Dir starts with SetDeviceReadsCached(true), so that a whole daemon can be measured
// with the read-back served from the page cache, against the real build in the same run
// (docs/benchmarks.md). Such a binary proves the kernel's buffer, not the device: never
// run it with data that matters.
const benchCachedReadBack = true
