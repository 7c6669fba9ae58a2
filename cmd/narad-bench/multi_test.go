package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// twoFakes serves two fake nodes that both know topic bench; it returns them and -addr.
func twoFakes(t *testing.T) (a, b *fakeNode, addrs string) {
	t.Helper()
	a, b = newFake(), newFake()
	a.topics["bench"], b.topics["bench"] = 3, 3
	return a, b, serve(t, a) + "," + serve(t, b)
}

func TestWorkersSpreadOverAddresses(t *testing.T) {
	a, b, addrs := twoFakes(t)
	code, r, stderr := benchJSON(t, addrs, "-mode", "produce", "-workers", "4", "-duration", "200ms", "-size", "64")
	pa, _, _ := a.counts()
	pb, _, _ := b.counts()
	if code != 0 || r.Nodes != 2 || r.Messages == 0 || r.Errors != 0 {
		t.Fatalf("exit %d, stderr %s, result %+v", code, stderr, r)
	}
	if pa == 0 || pb == 0 || uint64(pa+pb) < r.Messages {
		t.Fatalf("node a stored %d, node b %d, counted %d", pa, pb, r.Messages)
	}
	code, r, stderr = benchJSON(t, addrs, "-mode", "consume-ack", "-workers", "2", "-batch", "10", "-duration", "200ms", "-prefill", "400", "-size", "32")
	_, aa, _ := a.counts()
	_, ab, _ := b.counts()
	if code != 0 || r.Prefilled != 400 || aa == 0 || ab == 0 || r.Errors != 0 {
		t.Fatalf("exit %d, stderr %s, acked %d+%d, result %+v", code, stderr, aa, ab, r)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-addr", addrs, "-mode", "produce", "-workers", "2", "-duration", "50ms"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "mode=produce workers=2 size=1024 nodes=2 duration=") {
		t.Fatalf("text report, exit %d:\n%s%s", code, out.String(), errOut.String())
	}
}

func TestSingleAddressReportUnchanged(t *testing.T) {
	addr := serve(t, newFake())
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-addr", addr, "-mode", "produce", "-workers", "1", "-duration", "50ms", "-create-topic", "-json"}, &out, &errOut)
	if code != 0 || strings.Contains(out.String(), `"nodes"`) || strings.Contains(out.String(), `"latency"`) {
		t.Fatalf("exit %d, JSON %s", code, out.String())
	}
}

func TestLatencyAgainstFakes(t *testing.T) {
	a, b, addrs := twoFakes(t)
	code, r, stderr := benchJSON(t, addrs, "-mode", "latency", "-workers", "4", "-consumers", "2", "-duration", "200ms", "-drain", "20s")
	l := r.Latency
	if code != 0 || l == nil || r.Errors != 0 || r.Nodes != 2 {
		t.Fatalf("exit %d, stderr %s, result %+v", code, stderr, r)
	}
	if l.Produced == 0 || l.Produced != r.Messages || l.Received != l.Produced || l.Lost != 0 || l.Duplicates != 0 ||
		l.Unanswered != 0 || l.Foreign != 0 || l.DrainTimedOut || l.LatencyN != l.Received {
		t.Fatalf("latency %+v", *l)
	}
	if l.P99Ms < l.P50Ms || l.MaxMs < l.P99Ms || l.Producers != 4 || l.Consumers != 2 || l.ConsumeReqs == 0 {
		t.Fatalf("latency %+v", *l)
	}
	pa, aa, _ := a.counts()
	pb, ab, _ := b.counts()
	if pa == 0 || pb == 0 || uint64(aa+ab) != l.Received {
		t.Fatalf("produced %d+%d, acked %d+%d, received %d", pa, pb, aa, ab, l.Received)
	}

	// At 100 msg/s a 200 ms phase has exactly 20 slots.
	code, r, stderr = benchJSON(t, addrs, "-mode", "latency", "-workers", "3", "-consumers", "2", "-rate", "100", "-duration", "200ms")
	if code != 0 || r.Latency == nil || r.Latency.Produced == 0 || r.Latency.Produced > 20 || r.Latency.Lost != 0 || r.Latency.RatePerSec != 100 {
		t.Fatalf("exit %d, stderr %s, result %+v %+v", code, stderr, r, r.Latency)
	}
}

func TestLatencyReportsLostMessages(t *testing.T) {
	f := newFake()
	f.dropEvery = 3
	addr := serve(t, f)
	code, r, _ := benchJSON(t, addr, "-mode", "latency", "-workers", "2", "-consumers", "1", "-duration", "100ms", "-drain", "200ms", "-create-topic")
	l := r.Latency
	if code != 1 || l == nil || l.Lost == 0 || l.Lost+l.Received != l.Produced || !l.DrainTimedOut || !strings.Contains(r.Note, "were not received") {
		t.Fatalf("exit %d, result %+v, latency %+v", code, r, l)
	}
}

// A 200 without a body is a failure (counted), not an empty poll.
func TestEmpty200IsCounted(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /v1/topics/bench/consume", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("POST /v1/topics/bench/produce", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	code, r, _ := benchJSON(t, addr, "-mode", "consume-ack", "-workers", "1", "-duration", "100ms")
	if code != 1 || r.Statuses["bad 200 body"] == 0 || r.EmptyPolls != 0 {
		t.Fatalf("exit %d, result %+v", code, r)
	}
	code, r, _ = benchJSON(t, addr, "-mode", "latency", "-workers", "1", "-consumers", "1", "-duration", "100ms", "-drain", "0s")
	if l := r.Latency; code != 1 || r.Statuses["consumer bad 200 body"] == 0 || l == nil || l.Produced == 0 || l.Lost != l.Produced || !l.DrainTimedOut {
		t.Fatalf("exit %d, result %+v, latency %+v", code, r, l)
	}
}
