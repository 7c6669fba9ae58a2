#!/usr/bin/env bash
# make bench-move: starts three narad nodes on loopback (data in a temporary directory),
# runs narad-bench -mode move against them (MOVE_MIB MiB in the partition that moves,
# default 1024), and stops them. Figures: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
make build >/dev/null
go build -o bin/narad-bench ./cmd/narad-bench
dir=$(mktemp -d)
export NARAD_CLUSTER_SECRET='bench-move: a shared secret of 16 bytes or more'
export NARAD_ADMIN_PASSWORD='bench-move-password' NARAD_PASSWORD='bench-move-password'
peers=1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
for i in 1 2 3; do
  bin/narad serve -id $i -data "$dir/n$i" -addr 127.0.0.1:710$i -peers $peers 2> "$dir/n$i.log" &
  pids+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 1 300); do
    curl -sf -o /dev/null 127.0.0.1:710$i/readyz && break
    sleep 0.1 # polling the node's readiness, bounded to 30 s
  done
done
bin/narad-bench -addr 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 -mode move -topic movebench \
  -partitions 4 -workers "${WORKERS:-16}" -size 1024 -duration "${DURATION:-10s}" -move-mib "${MOVE_MIB:-1024}"
