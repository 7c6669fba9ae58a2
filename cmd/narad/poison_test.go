package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/narad/narad/core/disk"
)

// syncFailFS is the real shell's file system with fdatasync failing (EIO) for the files
// under one directory while armed.
type syncFailFS struct {
	disk.FS
	mu     sync.Mutex
	prefix string // "": disarmed
	failed int
}

func (f *syncFailFS) Sync(name string) error {
	f.mu.Lock()
	fail := f.prefix != "" && strings.HasPrefix(name, f.prefix)
	if fail {
		f.failed++
	}
	f.mu.Unlock()
	if fail {
		return fmt.Errorf("injected fdatasync failure of %s: %w", name, disk.ErrIO)
	}
	return f.FS.Sync(name)
}

func (f *syncFailFS) arm(prefix string) {
	f.mu.Lock()
	f.prefix = prefix
	f.mu.Unlock()
}

// A partition whose fdatasync fails (an error injected into the real disk shell) fails
// alone (issue 13, point 4): the process keeps serving, the other partition takes
// produces and consumes (and the failed one's records, rerouted), a produce pinned to
// the failed one is 503 with Retry-After, GET /v1/topics/{t} and /metrics show it; once
// the disk is healthy it is reopened without a restart, and every message answered 202
// is consumed.
func TestFailedPartitionStaysLocal(t *testing.T) {
	fs := &syncFailFS{}
	d := startDaemon(t, t.TempDir(), nil, func(c *config) {
		c.wrapFS = func(inner disk.FS) disk.FS { fs.FS = inner; return fs }
	})
	tp := d.createTopic(`{"name":"p","partitions":2}`)
	want := map[string]bool{}
	send := func(partition int, payload string) {
		d.produce(http.StatusAccepted, "p", fmt.Sprintf("partition=%d", partition), []byte(payload))
		want[payload] = true
	}
	send(0, "zero-before")
	send(1, "one-before")
	d.waitCommitted("p", 2)

	fs.arm(fmt.Sprintf("parts/%016x-0/", tp.ID))
	send(0, "zero-during") // the WAL takes it; its commit fails the partition
	eventually(t, startBound, "partition 0 shows failed", func() bool {
		return d.getTopic("p").PartitionStats[0].State == "failed"
	})
	if st := d.getTopic("p").PartitionStats[1].State; st != "" {
		t.Fatalf("partition 1 state %q, want healthy", st)
	}
	metrics := string(d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body)
	if metricValue(t, metrics, "narad_partitions_failed") != 1 || metricValue(t, metrics, "narad_partition_failures_total") < 1 {
		t.Fatalf("metrics do not show the failed partition")
	}
	r := d.produce(http.StatusServiceUnavailable, "p", "partition=0", []byte("refused"))
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %v", r)
	}
	send(1, "one-during")
	send(1, "one-during-2")

	fs.arm("")
	eventually(t, startBound, "partition 0 is reopened", func() bool {
		return d.getTopic("p").PartitionStats[0].State == ""
	})
	metrics = string(d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body)
	if metricValue(t, metrics, "narad_partition_reopens_total") < 1 {
		t.Fatalf("metrics count no reopen")
	}
	send(0, "zero-after")
	got := map[string]bool{}
	eventually(t, startBound, "every message answered 202 is consumed", func() bool {
		r := d.do(http.MethodGet, "/v1/topics/p/consume?max=100", nil, nil)
		if r.status == http.StatusNoContent {
			return false // committed after the last look: look again
		}
		var ms struct {
			Messages []messageJSON `json:"messages"`
		}
		mustDecode(t, r.body, &ms)
		for _, m := range ms.Messages {
			got[strings.Trim(string(m.Payload), `"`)] = true
			d.ack(http.StatusNoContent, "p", m.ReceiptHandle, "")
		}
		for p := range want {
			if !got[p] {
				return false
			}
		}
		return true
	})
	if got["refused"] {
		t.Fatal("a produce answered 503 was delivered")
	}
	if d.exited {
		t.Fatal("the process exited")
	}
}
