package nodeshell

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
)

var testSecret = []byte("the test cluster's shared secret")

// clusterBound bounds every wait of the cluster test: elections, joins and commits over
// loopback take a few seconds, more under -race on a loaded machine.
const clusterBound = 60 * time.Second

// eventually polls cond every 10 ms until it holds, failing the test past bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(clusterBound)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, clusterBound)
		}
		<-tick.C
	}
}

// openCluster opens shells 1, 2, 3 on loopback ports the kernel picks. Each is told only
// of the shells opened before it (lower ids, which a node dials): node 1 knows nobody and
// accepts its peers' connections, and every node learns the others' addresses from the
// members.
func openCluster(t *testing.T) []*Shell {
	shells := make([]*Shell, 3)
	known := map[uint64]string{}
	for id := uint64(1); id <= 3; id++ {
		cfg := node.Config{NodeID: fmt.Sprintf("n%d", id), Meta: meta.Config{ID: id, Voters: []uint64{1, 2, 3}}}
		s, err := OpenCluster(t.TempDir(), cfg, Cluster{Listen: "127.0.0.1:0", Secret: testSecret,
			Peers: maps.Clone(known), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		shells[id-1] = s
		known[id] = s.link.tr.Addr()
	}
	t.Cleanup(func() {
		for _, s := range shells {
			_ = s.Close()
		}
	})
	return shells
}

// TestClusterOfShells runs three shells over their transports: they elect a metastore
// leader, join the members, spread a topic's partitions, commit every shell's produces on
// the partitions' owners, deliver each message from its owner, and close without leaking
// a goroutine (TestMain's goleak).
func TestClusterOfShells(t *testing.T) {
	shells := openCluster(t)
	ctx := context.Background()
	leader := -1
	for i, s := range shells {
		eventually(t, fmt.Sprintf("node %d sees 3 live members", i+1), func() bool {
			ms, err := s.Members(ctx)
			alive := 0
			for _, m := range ms {
				if m.Alive {
					alive++
				}
				if m.Leader {
					leader = int(m.ID) - 1
				}
			}
			return err == nil && alive == 3
		})
	}
	parts := uint32(6)
	if _, err := shells[leader].CreateTopic(ctx, node.TopicSpec{Name: "t", Partitions: &parts}); err != nil {
		t.Fatalf("create on the leader (node %d): %v", leader+1, err)
	}
	sent := map[string]bool{}
	for i, s := range shells {
		eventually(t, fmt.Sprintf("node %d knows the topic", i+1), func() bool {
			_, _, err := s.GetTopic(ctx, "t")
			return err == nil
		})
	}
	produceSyncOnEach(t, shells, sent)
	for i, s := range shells {
		msgs := make([]node.ProduceMessage, 30)
		for j := range msgs {
			p := fmt.Sprintf("from %d #%d", i+1, j)
			msgs[j], sent[p] = node.ProduceMessage{Partition: -1, Payload: []byte(p)}, true
		}
		if n, err := s.Produce(ctx, "t", msgs); err != nil || n != len(msgs) {
			t.Fatalf("produce on node %d: %d %v", i+1, n, err)
		}
	}
	got := map[string]int{}
	eventually(t, "every message delivered", func() bool {
		for _, s := range shells {
			ms, err := s.Consume(ctx, node.ConsumeRequest{Topic: "t", Partition: -1, Max: 100, WaitNs: 10_000_000})
			if err != nil {
				t.Fatalf("consume: %v", err)
			}
			for _, m := range ms {
				got[string(m.Payload)]++
				if _, err := s.Ack(ctx, "", "t", []string{m.ReceiptHandle}, node.AckSettle); err != nil {
					t.Fatal(err)
				}
			}
		}
		return len(got) == len(sent)
	})
	for p, n := range got {
		if !sent[p] || n != 1 {
			t.Errorf("delivered %q %d times", p, n)
		}
	}
	for i, s := range shells {
		if err := s.Close(); err != nil {
			t.Errorf("close node %d: %v", i+1, err)
		}
	}
}

// produceSyncOnEach commits 30 messages through each shell's synchronous path: when
// ProduceSync returns they are committed at their owners, so the partitions' high
// watermarks (gathered from the owners) already count them.
func produceSyncOnEach(t *testing.T, shells []*Shell, sent map[string]bool) {
	ctx := context.Background()
	for i, s := range shells {
		msgs := make([]node.ProduceMessage, 30)
		for j := range msgs {
			p := fmt.Sprintf("sync from %d #%d", i+1, j)
			msgs[j], sent[p] = node.ProduceMessage{Partition: -1, Payload: []byte(p)}, true
		}
		if n, err := s.ProduceSync(ctx, "t", msgs); err != nil || n != len(msgs) {
			t.Fatalf("sync produce on node %d: %d %v", i+1, n, err)
		}
		_, stats, err := s.GetTopic(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		var committed uint64
		for _, ps := range stats {
			committed += ps.HighWatermark
		}
		if want := uint64(30 * (i + 1)); committed != want {
			t.Fatalf("after node %d's sync produce the partitions hold %d records, want %d: %+v", i+1, committed, want, stats)
		}
	}
}
