package walshell

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/narad/narad/core/wal"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func record(i int) wal.Record {
	return wal.Record{Topic: "t", Partition: uint32(i % 3), Incarnation: 1, Payload: []byte(fmt.Sprintf("payload-%d", i))}
}

func TestConcurrentAppendsSurviveReopen(t *testing.T) {
	root := t.TempDir()
	s, rec, err := Open(root, wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Records) != 0 || rec.NextSeq != 1 {
		t.Fatalf("fresh WAL recovered %+v", rec)
	}
	const n = 400
	seqs := make([]uint64, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := s.Append(context.Background(), record(i))
			if err != nil {
				t.Errorf("append %d: %v", i, err)
			}
			seqs[i] = seq
		}()
	}
	wg.Wait()
	st := s.Stats()
	if st.RecordsSynced != n || st.GroupsSynced == 0 || st.GroupsSynced > n {
		t.Fatalf("stats %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, rec, err = Open(root, wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(rec.Records) != n {
		t.Fatalf("recovered %d records, want %d", len(rec.Records), n)
	}
	for i, seq := range seqs {
		got := rec.Records[seq-1]
		if want := record(i); got.Seq != seq || !bytes.Equal(got.Payload, want.Payload) {
			t.Fatalf("seq %d: got %q", seq, got.Payload)
		}
	}
}

func TestCancelledBeforeStagingIsNotAppended(t *testing.T) {
	s, _, err := Open(t.TempDir(), wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Append(ctx, record(1)); err != context.Canceled {
		t.Fatalf("got %v", err)
	}
	if seq, err := s.Append(context.Background(), record(2)); err != nil || seq != 1 {
		t.Fatalf("next append seq %d err %v", seq, err)
	}
}

func TestAppendAfterCloseIsRefused(t *testing.T) {
	s, _, err := Open(t.TempDir(), wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Append(context.Background(), record(1)); err != ErrClosed {
		t.Fatalf("got %v", err)
	}
}
