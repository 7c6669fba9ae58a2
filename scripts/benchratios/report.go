package main

import (
	"fmt"
	"os"
	"time"
)

// fsyncP50 writes 1 KiB at successive offsets of a file in dir and fdatasyncs after each,
// n times, and answers the p50 of write+fdatasync in milliseconds: the disk's floor
// under one producer's acknowledgement. With overZeros the file is first filled with
// zeros and synced, so that every write lands on blocks the file holds (the way the
// WAL and the partition logs write since they preallocate, core/wal/prealloc.go): the
// fdatasync then commits no metadata. The target compares with the plain append.
func fsyncP50(dir string, n int, overZeros bool) (float64, error) {
	f, err := os.Create(dir + "/fsync-probe")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	if overZeros {
		if _, err := f.WriteAt(make([]byte, n*1024), 0); err != nil {
			return 0, err
		}
		if err := fdatasync(f); err != nil {
			return 0, err
		}
	}
	buf := make([]byte, 1024)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		t := time.Now()
		if _, err := f.WriteAt(buf, int64(i)*1024); err != nil {
			return 0, err
		}
		if err := fdatasync(f); err != nil {
			return 0, err
		}
		lat = append(lat, time.Since(t))
	}
	return p50Ms(lat), nil
}

type row struct {
	what, value, target string
	met                 bool
}

func report(f figures) {
	oneRatio := f.one64 / f.bare
	rows := []row{
		{"fdatasync p50 (1 KiB append)", fmt.Sprintf("%.3f ms", f.fsyncP50Ms), "", true},
		{"fdatasync p50 (1 KiB over zeros)", fmt.Sprintf("%.3f ms", f.fsyncZerosP50Ms), "", true},
		{"bare handler x64", fmt.Sprintf("%.0f msgs/s", f.bare), "", true},
		{"one node x64", fmt.Sprintf("%.0f msgs/s, %.3f ms CPU/msg", f.one64, f.oneCPUMs), "", true},
		{"one node / bare", fmt.Sprintf("%.2f", oneRatio), ">= 0.60", oneRatio >= 0.6},
		{"one node x1 p50 - fdatasync p50", fmt.Sprintf("%.3f ms (p50 %.3f)", f.one1P50Ms-f.fsyncP50Ms,
			f.one1P50Ms), "<= 0.150 ms", f.one1P50Ms-f.fsyncP50Ms <= 0.15},
	}
	rows = append(rows, floorRows(f)...)
	rows = append(rows, clusterRows("spread over the nodes", f.spread, f)...)
	rows = append(rows, clusterRows("at the owners", f.owner, f)...)
	rows = append(rows, clusterRows("spread, -produce-local-partitions", f.local, f)...)
	rows = append(rows, row{"errors / lost", fmt.Sprintf("%d, %d / %d", f.oneErrors, f.threeErrors, f.lost),
		"0", f.oneErrors+f.threeErrors+f.lost == 0})
	fmt.Println("| measure | figure | target | met |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, r := range rows {
		met := ""
		if r.target != "" {
			met = map[bool]string{true: "yes", false: "no"}[r.met]
		}
		fmt.Printf("| %s | %s | %s | %s |\n", r.what, r.value, r.target, met)
	}
}

// clusterRows are the three nodes' rows with the clients routed as how says.
func clusterRows(how string, cf clusterFigures, f figures) []row {
	threeRatio := cf.rate / f.one64
	cpuRatio := cf.cpuMs / f.oneCPUMs
	return []row{
		{"three nodes x64, " + how, fmt.Sprintf("%.0f msgs/s, %.3f ms CPU/msg", cf.rate, cf.cpuMs), "", true},
		{"three nodes / one node, " + how, fmt.Sprintf("%.2f", threeRatio), ">= 0.80", threeRatio >= 0.8},
		{"CPU per msg, three / one, " + how, fmt.Sprintf("%.2f", cpuRatio), "<= 1.50", cpuRatio <= 1.5},
		{"202 to consumable p50, " + how, fmt.Sprintf("%.1f ms", cf.consumeP50Ms), "< 15 ms", cf.consumeP50Ms < 15},
		{"202 to consumable p99, " + how, fmt.Sprintf("%.1f ms", cf.consumeP99Ms), "< 50 ms", cf.consumeP99Ms < 50},
	}
}

// floorRows set the figures beside the floors (floors.go); they have no target.
func floorRows(f figures) []row {
	fl := f.floor
	one1Floor := fl.readBackP50Ms + fl.bare1P50Ms
	return []row{
		{"floor: write over zeros + fdatasync + device read-back p50", fmt.Sprintf("%.3f ms",
			fl.readBackP50Ms), "", true},
		{"floor: bare handler in its own process x1 p50", fmt.Sprintf("%.3f ms", fl.bare1P50Ms), "", true},
		{"one node x1 p50 - (read-back floor + bare x1)", fmt.Sprintf("%.3f ms (floors %.3f over append fdatasync)",
			f.one1P50Ms-one1Floor, one1Floor-f.fsyncP50Ms), "", true},
		{"floor: bare handler in its own process x64", fmt.Sprintf("%.0f msgs/s, %.3f ms CPU/msg",
			fl.bareProc64, fl.bareCPUMs), "", true},
		{"one node / bare in its own process", fmt.Sprintf("%.2f", f.one64/fl.bareProc64), "", true},
		{"floor: three bare processes x64 / one", fmt.Sprintf("%.2f, CPU per msg %.2f",
			fl.bare3/fl.bareProc64, fl.bare3CPUMs/fl.bareCPUMs), "", true},
		{"one node x21, CPU per msg / x64 (each member's third)", fmt.Sprintf("%.2f (%.3f ms)",
			f.one21CPUMs/f.oneCPUMs, f.one21CPUMs), "", true},
	}
}
