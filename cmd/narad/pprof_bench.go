//go:build narad_bench_pprof

package main

import (
	"net/http"
	_ "net/http/pprof"
)

// A benchmark build (go build -tags narad_bench_pprof) serves net/http/pprof on
// 127.0.0.1:6060 for profiling the daemon under load (docs/benchmarks.md).
func init() {
	go http.ListenAndServe("127.0.0.1:6060", nil)
}
