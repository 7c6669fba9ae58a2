package sim

import "github.com/narad/narad/core/rng"

// DrawPreallocBytes draws the zeros a log writes ahead of its records (wal.Config and
// plog.Config PreallocBytes) for a simulated run: a quarter of the runs write none, the
// others a few KiB at most. The daemon's 256 KiB would make a write mostly zeros, and the
// disk's silent corruption of a write would then mostly strike zeros nobody reads; small
// sizes keep it on the records and roll the zeros over often.
func DrawPreallocBytes(r *rng.Rand) int64 {
	if r.Chance(0.25) {
		return -1
	}
	return int64(r.Range(64, 8<<10))
}
