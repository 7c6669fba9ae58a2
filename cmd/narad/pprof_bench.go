//go:build narad_bench_pprof

package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

// A benchmark build (go build -tags narad_bench_pprof) serves net/http/pprof on
// NARAD_PPROF_ADDR (default 127.0.0.1:6060) for profiling the daemon under load
// (docs/benchmarks.md); give each node of a cluster on one machine its own.
func init() {
	addr := os.Getenv("NARAD_PPROF_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6060"
	}
	go http.ListenAndServe(addr, nil)
}
