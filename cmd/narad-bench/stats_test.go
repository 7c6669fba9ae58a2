package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestMergeStatsKeepsEarliestFirstError(t *testing.T) {
	a, b := &workerStats{}, &workerStats{}
	b.fail("503", "early")
	a.fail("503", "late")
	a.fail("503", "later still")
	a.msgs, b.msgs = 10, 20
	a.reqs, b.reqs = 10, 23
	a.hist.Record(time.Millisecond)
	r := Result{Name: "x", Mode: modeProduce}
	mergeStats(&r, []*workerStats{a, b}, time.Second)
	if r.Messages != 30 || r.Requests != 33 || r.Errors != 3 || r.Statuses["503"] != 3 {
		t.Fatalf("%+v", r)
	}
	if r.FirstErrors["503"] != "early" {
		t.Fatalf("first error %q, want the earliest", r.FirstErrors["503"])
	}
	if r.MsgsPerSec != 30 || r.P50Ms != 1 {
		t.Fatalf("rates %+v", r)
	}
	var buf bytes.Buffer
	writeText(&buf, &r)
	writeTable(&buf, []Result{r})
	if !strings.Contains(buf.String(), "503×3") || !strings.Contains(buf.String(), "early") {
		t.Fatalf("report:\n%s", buf.String())
	}
}
