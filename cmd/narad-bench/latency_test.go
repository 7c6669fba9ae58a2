package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseAddrs(t *testing.T) {
	for in, want := range map[string][]string{
		"127.0.0.1:7101": {"127.0.0.1:7101"},
		"127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103": {"127.0.0.1:7101", "127.0.0.1:7102", "127.0.0.1:7103"},
		" 127.0.0.1:1 , [::1]:2,localhost:3 ":          {"127.0.0.1:1", "[::1]:2", "localhost:3"},
	} {
		got, err := parseAddrs(in)
		if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("parseAddrs(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ",", "127.0.0.1:1,", "127.0.0.1:1,,127.0.0.1:2", "127.0.0.1:1,10.0.0.1:2",
		"127.0.0.1:1,127.0.0.1:1", "127.0.0.1:1,127.0.0.1", strings.Repeat("127.0.0.1:1,", 16) + "127.0.0.1:2"} {
		if got, err := parseAddrs(bad); err == nil {
			t.Errorf("parseAddrs(%q) = %q, want an error", bad, got)
		}
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-addr", "127.0.0.1:1,10.1.2.3:7942", "-mode", "produce"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "non-loopback") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestLatencyBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-consumers", "0"},
		{"-consumers", "5000"},
		{"-rate", "-1"},
		{"-rate", "NaN"},
		{"-rate", "1e8"},
		{"-size", "29"},
		{"-batch", "101"},
		{"-batch", "0"},
		{"-drain", "-1s"},
	} {
		var out, errOut bytes.Buffer
		args = append([]string{"-mode", "latency"}, args...)
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut.String())
		}
	}
}

func TestMarkRoundTrip(t *testing.T) {
	p := makePayload(64)
	for _, c := range []struct {
		run uint32
		id  uint64
	}{{0, 0}, {1, 1}, {0xdeadbeef, 123456789}, {1<<32 - 1, 1<<64 - 1}} {
		putMark(p, c.run, c.id)
		if run, id, ok := parseMark(p); !ok || run != c.run || id != c.id {
			t.Errorf("mark %x/%d read back as %x/%d, %v: %q", c.run, c.id, run, id, ok, p[:markLen])
		}
		if p[markLen] != makePayload(64)[markLen] {
			t.Errorf("putMark wrote past the mark")
		}
		asString, _ := json.Marshal(string(p))
		if run, id, ok := payloadMark(asString, ""); !ok || run != c.run || id != c.id {
			t.Errorf("payload as a JSON string %s: %x/%d, %v", asString, run, id, ok)
		}
		asB64, _ := json.Marshal(base64.StdEncoding.EncodeToString(p[:markLen+1]))
		if run, id, ok := payloadMark(asB64, "base64"); !ok || run != c.run || id != c.id {
			t.Errorf("payload in base64 %s: %x/%d, %v", asB64, run, id, ok)
		}
	}
	putMark(p, 7, 9)
	for _, bad := range []string{`{"id":1}`, `"nbl:0000000`, `"xbl:00000007:0000000000000009:"`,
		`"nbl:0000000G:0000000000000009:"`, `"nbl:00000007-0000000000000009:"`, `"nbl:00000007:000000000000000F:"`, `"`, ``} {
		if _, _, ok := payloadMark([]byte(bad), ""); ok {
			t.Errorf("payloadMark(%s) accepted", bad)
		}
	}
	if _, _, ok := payloadMark([]byte(`"bmJsOjAw!!"`), "base64"); ok {
		t.Error("a short or broken base64 payload was accepted")
	}
}

// marked is the JSON string payload of (run, id) as the API returns it.
func marked(run uint32, id uint64) []byte {
	p := makePayload(40)
	putMark(p, run, id)
	b, _ := json.Marshal(string(p))
	return b
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestTrackerOutcomes(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tr := newTracker(base, 42)
	ids := make([]uint64, 6)
	for i := range ids {
		id, ok := tr.issue()
		if !ok || id != uint64(i) {
			t.Fatalf("issue %d gave %d, %v", i, id, ok)
		}
		ids[i] = id
	}
	tr.accept(0, at(10)) // 202 then receipt: 5 ms
	tr.receive(marked(42, 0), "", at(15))
	tr.receive(marked(42, 1), "", at(20)) // receipt before the 202 was read: early, 0 ms
	tr.accept(1, at(21))
	tr.accept(2, at(30)) // 202, received three times: 20 ms, two duplicates
	tr.receive(marked(42, 2), "", at(50))
	tr.receive(marked(42, 2), "", at(60))
	tr.receive(marked(42, 2), "", at(70))
	tr.accept(3, at(40))                  // 202, never received: lost
	tr.receive(marked(42, 4), "", at(45)) // received, no 202: unanswered
	// id 5: issued, neither (a produce that failed and was not stored)
	tr.receive(marked(41, 0), "", at(1))  // another run
	tr.receive(marked(42, 99), "", at(1)) // an id never issued
	tr.receive([]byte(`{"x":1}`), "", at(1))
	if isClosed(tr.done()) {
		t.Fatal("done before expect")
	}
	tr.expect(tr.accepted.Load())
	if tr.accepted.Load() != 4 || tr.matched.Load() != 3 || isClosed(tr.done()) {
		t.Fatalf("accepted %d matched %d: done must wait for message 3", tr.accepted.Load(), tr.matched.Load())
	}
	tr.receive(marked(42, 3), "", at(100)) // late: 60 ms
	if !isClosed(tr.done()) {
		t.Fatal("done not closed once every accepted message was received")
	}
	s := tr.summarize()
	if s.accepted != 4 || s.received != 4 || s.lost != 0 || s.duplicates != 2 || s.unanswered != 1 || s.early != 1 || s.foreign != 3 {
		t.Fatalf("summary %+v", s)
	}
	if s.latency.Count() != 4 || s.latency.Min() != 0 || s.latency.Max() != 60*time.Millisecond {
		t.Fatalf("latency n=%d min %v max %v", s.latency.Count(), s.latency.Min(), s.latency.Max())
	}
	if p50, want := s.latency.Quantile(0.5), 5*time.Millisecond; p50 < want || p50 > want+want/128 {
		t.Errorf("p50 = %v, want %v within 1/128", p50, want)
	}
}

func TestTrackerLostAndExpectAfterMatch(t *testing.T) {
	base := time.Unix(0, 0)
	tr := newTracker(base, 1)
	for range 3 {
		tr.issue()
	}
	tr.accept(0, base)
	tr.receive(marked(1, 0), "", base)
	tr.accept(1, base)
	tr.accept(2, base)
	tr.receive(marked(1, 2), "", base)
	tr.expect(2) // already matched: closes at once
	if !isClosed(tr.done()) {
		t.Fatal("expect below the matched count must close done")
	}
	s := tr.summarize()
	if s.accepted != 3 || s.received != 2 || s.lost != 1 || s.duplicates != 0 {
		t.Fatalf("summary %+v", s)
	}
}

func TestTrackerIDLimit(t *testing.T) {
	tr := newTracker(time.Unix(0, 0), 1)
	tr.issued.Store(trackIDsMax - 1)
	if id, ok := tr.issue(); !ok || id != trackIDsMax-1 {
		t.Fatalf("last id %d, %v", id, ok)
	}
	if _, ok := tr.issue(); ok {
		t.Fatal("an id past trackIDsMax was issued")
	}
	tr.receive(marked(1, trackIDsMax), "", time.Unix(0, 0))
	if tr.foreign.Load() != 1 {
		t.Fatal("an id past the limit must count as foreign")
	}
}

func TestSlotOffset(t *testing.T) {
	for _, c := range []struct {
		k    uint64
		rate float64
		want time.Duration
	}{{0, 2000, 0}, {1, 2000, 500 * time.Microsecond}, {2000, 2000, time.Second}, {3, 3, time.Second}, {10, 0.5, 20 * time.Second}} {
		if got := slotOffset(c.k, c.rate); got != c.want {
			t.Errorf("slot %d at %g/s: %v, want %v", c.k, c.rate, got, c.want)
		}
	}
}

func TestWriteLatency(t *testing.T) {
	r := Result{Name: "latency", Mode: modeLatency, Nodes: 3, Latency: &LatencyStats{
		Producers: 64, Consumers: 16, RatePerSec: 2000, Produced: 10, Received: 9, Lost: 1, P50Ms: 4.5, DrainTimedOut: true}}
	var buf bytes.Buffer
	writeText(&buf, &r)
	for _, want := range []string{"nodes=3", "2000 msg/s", "16 consumers", "202→consumable  p50 4.50ms", "1 LOST", "gave up"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
	if !failed(&r) {
		t.Error("a run that lost messages must fail")
	}
	dst := Result{Statuses: map[string]uint64{"503": 1}, Errors: 1}
	src := Result{Statuses: map[string]uint64{"503": 2}, FirstErrors: map[string]string{"503": "x"}, Errors: 2, MissingRoute: "GET /c → 405"}
	mergeErrors(&dst, &src)
	if dst.Errors != 3 || dst.Statuses["503"] != 1 || dst.Statuses["consumer 503"] != 2 || dst.FirstErrors["consumer 503"] != "x" || dst.MissingRoute != "GET /c → 405" {
		t.Fatalf("merged %+v", dst)
	}
}
