package invariants

import (
	"errors"
	"fmt"
	"testing"

	"github.com/narad/narad/core/plog"
)

func TestPartitionOfReadsTheDirectory(t *testing.T) {
	k, ok := PartitionOf("parts/00000000000000ff-12/00000000000000000000.seg")
	if !ok || k != (PartRef{TopicID: 255, Index: 12}) {
		t.Fatalf("PartitionOf = %+v, %v", k, ok)
	}
	if _, ok := PartitionOf("wal/00000001.log"); ok {
		t.Fatal("a WAL file is no partition's")
	}
}

func TestPoisonHoldsReopensToFailures(t *testing.T) {
	p := NewPoison()
	k := PartRef{TopicID: 1, Index: 0}
	if err := p.Reopened(5, k); err == nil {
		t.Fatal("a reopen with no failed op should be a violation")
	}
	p.OpDone(10, "parts/0000000000000001-1/seg", errors.New("eio")) // another partition
	p.OpDone(11, "parts/0000000000000001-0/seg", nil)
	if err := p.Reopened(12, k); err == nil {
		t.Fatal("a failed op of partition 1 does not explain partition 0's reopen")
	}
	p.OpDone(20, "acks/0000000000000001-0/acks.log", errors.New("eio"))
	p.OpDone(30, "parts/0000000000000001-0/seg", errors.New("eio"))
	if err := p.Reopened(1000, k); err != nil {
		t.Fatal(err)
	}
	if err := p.Reopened(2000, k); err == nil {
		t.Fatal("a second reopen needs a failure of its own")
	}
	if p.Reopens(k) != 1 || !p.ReopenBetween(k, 500, 1000) || p.ReopenBetween(k, 1001, 3000) {
		t.Fatal("reopen times")
	}
	// The reopen at 1000: an ack at 990 (window 15) may not have been flushed, one at 900
	// was, one at 1001 came after the reopen.
	if !p.AckLostAtReopen(k, 990, 15) || p.AckLostAtReopen(k, 900, 15) || p.AckLostAtReopen(k, 1001, 15) {
		t.Fatal("ack windows")
	}
	// The ack files failed at 20: acks from 5 on (window 15) may never have been written.
	if !p.AckNotPersisted(k, 5, 15) || p.AckNotPersisted(k, 4, 15) || !p.AckNotPersisted(k, 900, 15) {
		t.Fatal("acks after an ack-file failure")
	}
	p.OpDone(3000, "parts/0000000000000001-0/seg", errors.New("eio"))
	p.Restarted(3500)
	if p.AckNotPersisted(k, 3600, 15) {
		t.Fatal("a new process persists acks again")
	}
	if err := p.Reopened(4000, k); err == nil {
		t.Fatal("a failure of an earlier process does not explain a reopen")
	}
}

func TestPartitionFailureNamesPartitionErrors(t *testing.T) {
	if !PartitionFailure(fmt.Errorf("partition t/0: %w", plog.ErrFailed)) || PartitionFailure(errors.New("wal failed")) {
		t.Fatal("PartitionFailure")
	}
}
