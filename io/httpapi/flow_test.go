package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/narad/narad/core/node"
)

// TestQueueFlow drives one record through produce, consume, extend, release, redelivery,
// ack and a second ack, as a client would.
func TestQueueFlow(t *testing.T) {
	f := newFixture(t, Options{})
	expect := func(rq request, status int) response {
		t.Helper()
		res := f.do(rq)
		if res.status != status {
			t.Fatalf("%s %s: %d %q, want %d", rq.method, rq.path, res.status, res.body, status)
		}
		return res
	}
	expect(request{method: "POST", path: "/v1/topics/orders/produce?key=user-7&partition=1", header: octet, body: `{"id":7}`}, 202)
	var m struct {
		Partition     int             `json:"partition"`
		Offset        int             `json:"offset"`
		Key           string          `json:"key"`
		Payload       json.RawMessage `json:"payload"`
		ReceiptHandle string          `json:"receipt_handle"`
	}
	consume := func() {
		t.Helper()
		res := expect(request{method: "GET", path: "/v1/topics/orders/consume?wait=2s"}, 200)
		if err := json.Unmarshal([]byte(res.body), &m); err != nil {
			t.Fatal(err)
		}
	}
	consume()
	if m.Partition != 1 || m.Offset != 0 || m.Key != "user-7" || string(m.Payload) != `{"id":7}` || m.ReceiptHandle != "h-1" {
		t.Fatalf("consumed %+v", m)
	}
	expect(request{method: "GET", path: "/v1/topics/orders/consume"}, 204) // leased: nothing else
	expect(request{method: "POST", path: "/v1/topics/orders/ack?receipt_handle=h-1&extend=true"}, 204)
	expect(request{method: "POST", path: "/v1/topics/orders/ack?receipt_handle=h-1&extend=0"}, 204)
	expect(request{method: "POST", path: "/v1/topics/orders/ack?receipt_handle=h-1"}, 410) // released
	consume()
	if m.ReceiptHandle != "h-2" || m.Offset != 0 {
		t.Fatalf("redelivered %+v", m)
	}
	expect(request{method: "POST", path: "/v1/topics/orders/ack?receipt_handle=h-2"}, 204)
	expect(request{method: "POST", path: "/v1/topics/orders/ack?receipt_handle=h-2"}, 410)
	expect(request{method: "GET", path: "/v1/topics/orders/consume"}, 204)

	want := []string{
		"Produce orders 1",
		"Consume orders p=-1 max=1 wait=2000000000 off=false/0",
		"Consume orders p=-1 max=1 wait=0 off=false/0",
		"Ack orders [h-1] mode=1",
		"Ack orders [h-1] mode=2",
		"Ack orders [h-1] mode=0",
		"Consume orders p=-1 max=1 wait=2000000000 off=false/0",
		"Ack orders [h-2] mode=0",
		"Ack orders [h-2] mode=0",
		"Consume orders p=-1 max=1 wait=0 off=false/0",
	}
	if got := f.fb.callLog(); !slices.Equal(got, want) {
		t.Fatalf("broker calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBatchProduceMessages checks what each batch message becomes for the broker.
func TestBatchProduceMessages(t *testing.T) {
	f := newFixture(t, Options{})
	body := `{"messages":[
		{"payload": {"a": [1, 2]}},
		{"payload": "aGk=", "payload_encoding": "base64", "key": "k"},
		{"payload": "text", "key": "/w==", "key_encoding": "base64", "partition": 2},
		{"payload": null}]}`
	if res := f.do(request{method: "POST", path: "/v1/topics/orders/produce/batch", body: body}); res.status != 202 {
		t.Fatalf("%d %q", res.status, res.body)
	}
	f.fb.mu.Lock()
	defer f.fb.mu.Unlock()
	ft := f.fb.topics["orders"]
	var got []string
	for p, recs := range ft.parts {
		for _, r := range recs {
			got = append(got, fmt.Sprintf("p%d key=%v/%q payload=%q", p, r.hasKey, r.key, r.payload))
		}
	}
	slices.Sort(got)
	want := []string{
		`p1 key=false/"" payload="{\"a\": [1, 2]}"`, // round-robin: first keyless goes to 1
		`p2 key=false/"" payload="null"`,
		`p2 key=true/"\xff" payload="\"text\""`,
	}
	keyed := fmt.Sprintf("p%d key=true/\"k\" payload=\"hi\"", ft.pick(nodeMsgKey("k")))
	want = append(want, keyed)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestInFlightCap fills the one produce permit with a produce the broker holds, checks
// that the next produce is refused with 429 at once, then releases the first.
func TestInFlightCap(t *testing.T) {
	f := newFixture(t, Options{InFlightMax: 1})
	entered, release := f.fb.gateProduce()
	first := make(chan response)
	go func() {
		first <- f.do(request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "a"})
	}()
	<-entered
	for _, path := range []string{"/v1/topics/orders/produce", "/v1/topics/orders/produce/batch"} {
		res := f.do(request{method: "POST", path: path, header: octet, body: `{"messages":[{"payload":1}]}`})
		if res.status != 429 || res.body != `{"error":"over the in-flight cap"}` {
			t.Errorf("%s while full: %d %q, want 429", path, res.status, res.body)
		}
	}
	if res := f.do(request{method: "GET", path: "/v1/topics/orders/consume"}); res.status != 204 {
		t.Errorf("consume while produce is full: %d, want 204 (the cap is on produce only)", res.status)
	}
	close(release)
	if res := <-first; res.status != 202 {
		t.Fatalf("first produce: %d %q", res.status, res.body)
	}
	if res := f.do(request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "b"}); res.status != 202 {
		t.Fatalf("produce after release: %d %q", res.status, res.body)
	}
}

// TestListPaging walks the topic list two at a time with the page tokens.
func TestListPaging(t *testing.T) {
	f := newFixture(t, Options{})
	for _, n := range []string{"a", "b", "c"} {
		f.fb.addTopic(n, 1)
	}
	var names []string
	path := "/v1/topics?limit=2"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		res := f.do(request{method: "GET", path: path})
		var page struct {
			Topics []struct {
				Name string `json:"name"`
			} `json:"topics"`
			Next *string `json:"next_page_token"`
		}
		if res.status != 200 || json.Unmarshal([]byte(res.body), &page) != nil || page.Next == nil {
			t.Fatalf("%d %q", res.status, res.body)
		}
		for _, tp := range page.Topics {
			names = append(names, tp.Name)
		}
		if *page.Next == "" {
			break
		}
		if _, err := base64.RawURLEncoding.DecodeString(*page.Next); err != nil {
			t.Fatalf("token %q is not base64url: %v", *page.Next, err)
		}
		path = "/v1/topics?limit=2&page_token=" + *page.Next
	}
	if want := []string{"a", "b", "c", "full", "orders"}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}
	f.do(request{method: "GET", path: "/v1/topics?limit=5000"})
	if calls := f.fb.callLog(); calls[len(calls)-1] != `ListTopics 1000 ""` {
		t.Fatalf("limit 5000 reached the broker as %q, want clamped to 1000", calls[len(calls)-1])
	}
}

// TestMetrics checks the counters /metrics exposes after some traffic, and that a deleted
// topic's series go away.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFixture(t, Options{Registry: reg})
	if f.s.Registry() != reg {
		t.Fatal("Registry() is not the registry of the options")
	}
	for range 3 {
		f.do(request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "12345"})
	}
	f.do(request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":"ab"},{"payload":1}]}`})
	f.do(request{method: "POST", path: "/v1/topics/nope/produce", header: octet, body: "x"})
	f.do(request{method: "GET", path: "/v1/topics/full/consume?max=10"})
	f.do(request{method: "DELETE", path: "/v1/topics"})
	f.do(request{method: "GET", path: "/nope"})
	page := f.do(request{method: "GET", path: "/metrics"}).body
	for _, want := range []string{
		`narad_http_requests_total{route="POST /v1/topics/{topic}/produce",status="202"} 3`,
		`narad_http_requests_total{route="POST /v1/topics/{topic}/produce",status="404"} 1`,
		`narad_http_requests_total{route="POST /v1/topics/{topic}/produce/batch",status="202"} 1`,
		`narad_http_requests_total{route="GET /v1/topics/{topic}/consume",status="200"} 1`,
		`narad_http_requests_total{route="/v1/topics",status="405"} 1`,
		`narad_http_requests_total{route="unmatched",status="404"} 1`,
		`narad_http_request_duration_seconds_count{route="POST /v1/topics/{topic}/produce"} 4`,
		`narad_produced_messages_total{topic="orders"} 5`,
		`narad_produced_bytes_total{topic="orders"} 20`, // 3×5 + len(`"ab"`) + len(`1`)
		`narad_consumed_messages_total{topic="full"} 2`,
		`narad_consumed_bytes_total{topic="full"} 8`,
	} {
		if !strings.Contains(page, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(page, `topic="nope"`) {
		t.Error("an unknown topic got series")
	}
	f.do(request{method: "DELETE", path: "/v1/topics/orders"})
	if page := f.do(request{method: "GET", path: "/metrics"}).body; strings.Contains(page, `topic="orders"`) {
		t.Error("a deleted topic's series remain")
	}
	// A second server on the same registry reuses the collectors instead of panicking.
	s2 := New(newFakeBroker(), Options{Registry: reg})
	if s2.m.requests != f.s.m.requests {
		t.Error("a second server did not reuse the registered collectors")
	}
}

// TestDefaultRegistry checks that a server without a registry makes one with the runtime
// collectors.
func TestDefaultRegistry(t *testing.T) {
	s := New(newFakeBroker(), Options{})
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "go_goroutines"
	}
	if !found {
		t.Fatal("the default registry lacks the Go collector")
	}
	rec := newRecorder()
	s.Handler().ServeHTTP(rec, mustRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("healthz: %d", rec.Code)
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogging checks one debug line per request and a warning per 5xx.
func TestLogging(t *testing.T) {
	var sink syncBuffer
	log := slog.New(slog.NewTextHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFixture(t, Options{Logger: log})
	f.do(request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"})
	failWith("Produce", node.ErrWALFailed)(f)
	f.do(request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"})
	lines := strings.Split(strings.TrimSpace(sink.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), sink.String())
	}
	for i, want := range []string{
		`level=DEBUG msg="http request" method=POST path=/v1/topics/orders/produce route="POST /v1/topics/{topic}/produce" status=202`,
		`level=WARN msg="http request failed" method=POST path=/v1/topics/orders/produce route="POST /v1/topics/{topic}/produce" status=500`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant it to contain: %s", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[1], `err="the write-ahead log failed"`) {
		t.Errorf("the warning lacks the error: %s", lines[1])
	}
}
