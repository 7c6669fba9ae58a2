package walshell

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/core/wal"
)

// BenchmarkAppend measures the WAL through the real disk shell: 1 KiB records from 1, 16,
// 64 and 256 concurrent appenders, each waiting for its record to be durable. It reports
// records/s, p99 append latency and records per group-commit fdatasync.
func BenchmarkAppend(b *testing.B) {
	for _, appenders := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) { benchAppend(b, appenders) })
	}
}

func benchAppend(b *testing.B, appenders int) {
	s, _, err := Open(b.TempDir(), wal.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte(i)
	}
	lat := make([][]time.Duration, appenders)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for a := 0; a < appenders; a++ {
		n := b.N / appenders
		if a < b.N%appenders {
			n++
		}
		lat[a] = make([]time.Duration, 0, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				t0 := time.Now()
				if _, err := s.Append(context.Background(), wal.Record{Topic: "bench", Partition: uint32(a), Incarnation: 1, Payload: payload}); err != nil {
					b.Error(err)
					return
				}
				lat[a] = append(lat[a], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	st := s.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	}
	if st.GroupsSynced > 0 {
		b.ReportMetric(float64(st.RecordsSynced)/float64(st.GroupsSynced), "records/fdatasync")
	}
}
