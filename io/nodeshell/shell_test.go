package nodeshell

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/narad/narad/core/node"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitReady waits (bounded) until the shell serves requests.
func waitReady(t testing.TB, s *Shell) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for s.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", s.Ready())
		}
		<-tick.C
	}
}

// TestCloseWhileBusy closes shells while producers are busy and disk completions still
// issue follow-up ops (the final checkpoint's completion removes the WAL segments below
// it, for one). Close must never stop the executor under a completion that had read
// "not stopped" and was about to submit: that panicked ("Submit after Close").
func TestCloseWhileBusy(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		closeWhileBusy(t, round)
	}
}

func closeWhileBusy(t *testing.T, round int) {
	s, err := Open(t.TempDir(), node.Config{NodeID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, s)
	ctx := context.Background()
	parts := uint32(4)
	if _, err := s.CreateTopic(ctx, node.TopicSpec{Name: "busy", Partitions: &parts}); err != nil {
		t.Fatal(err)
	}
	// 2 MiB in batches: the WAL rotates past 1 MiB, and the checkpoint Close flushes lets
	// it remove the older segments.
	batch := make([]node.ProduceMessage, 64)
	for i := range batch {
		batch[i] = node.ProduceMessage{Partition: -1, Payload: bytes.Repeat([]byte{'a' + byte(i%26)}, 1024)}
	}
	for range 32 {
		if _, err := s.Produce(ctx, "busy", batch); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := s.Produce(ctx, "busy", batch[:8]); err != nil {
					return // closed
				}
			}
		}()
	}
	if err := s.Close(); err != nil {
		t.Errorf("round %d: close: %v", round, err)
	}
	wg.Wait()
}
