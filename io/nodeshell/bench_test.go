package nodeshell

import (
	"context"
	"strings"
	"testing"

	"github.com/narad/narad/core/node"
)

// BenchmarkProduce1KiB compares the two produce paths of one node on the real disk, at
// 64 concurrent producers of one 1 KiB message each (run with -cpu 2 on this machine):
// "wal" is the HTTP API's path (ingress WAL group commit, answer, then dispatch);
// "sync" is ProduceSync (the partition's commit, merged across waiting producers, before
// the answer). Each runs twice: with the read-backs after fdatasync reading the device
// (O_DIRECT, the default) and, as "-cachedreadback", reading the page cache (the earlier
// read-back, which proves only the kernel's buffer), so one run compares their cost.
func BenchmarkProduce1KiB(b *testing.B) {
	for _, name := range []string{"wal", "wal-cachedreadback", "sync", "sync-cachedreadback"} {
		path, cached := strings.CutSuffix(name, "-cachedreadback")
		b.Run(name, func(b *testing.B) {
			s, err := Open(b.TempDir(), node.Config{NodeID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.dir.SetDeviceReadsCached(cached)
			waitReady(b, s)
			ctx, parts := context.Background(), uint32(6)
			if _, err := s.CreateTopic(ctx, node.TopicSpec{Name: "b", Partitions: &parts}); err != nil {
				b.Fatal(err)
			}
			produce := s.Produce
			if path == "sync" {
				produce = s.ProduceSync
			}
			msg := []node.ProduceMessage{{Partition: -1, Payload: make([]byte, 1024)}}
			b.SetBytes(1024)
			b.SetParallelism(32) // 64 producers with GOMAXPROCS 2
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if n, err := produce(ctx, "b", msg); err != nil || n != 1 {
						b.Errorf("produce: %d %v", n, err)
						return
					}
				}
			})
		})
	}
}
