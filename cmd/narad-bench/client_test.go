package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNode is a tiny in-memory Narad speaking API.md's shapes: topics, produce, batch
// produce, consume with leases and long polls, single and batch ack. failEvery > 0 makes
// every n-th produce, batch, consume or ack answer 429 with a JSON error; without lists the
// routes it does not serve (answered by the mux: 404 text, or 405 for a known path).
// dropEvery > 0 makes it lose every n-th message it answered 202 for.
type fakeNode struct {
	failEvery int
	dropEvery int
	without   map[string]bool

	mu       sync.Mutex
	topics   map[string]int
	queue    [][]byte
	leases   map[string]bool
	nextOff  int
	calls    int
	produced int
	acked    int
	failed   int
	notify   chan struct{}
	// the partition query of every produce and consume ("" when none), and what
	// GET /v1/topics/{topic} and /v1/cluster/members answer (owners.go)
	pinned  map[string]int
	owners  []string
	members []fakeMember
}

type fakeMember struct {
	ID   uint64 `json:"id"`
	Addr string `json:"addr"`
}

func newFake() *fakeNode {
	return &fakeNode{topics: map[string]int{}, leases: map[string]bool{}, notify: make(chan struct{}), without: map[string]bool{},
		pinned: map[string]int{}}
}

func (f *fakeNode) handler() http.Handler {
	mux := http.NewServeMux()
	routes := map[string]http.HandlerFunc{
		"POST /v1/topics":                       f.createTopic,
		"POST /v1/topics/{topic}/produce":       f.produce,
		"POST /v1/topics/{topic}/produce/batch": f.produceBatch,
		"GET /v1/topics/{topic}/consume":        f.consume,
		"POST /v1/topics/{topic}/ack":           f.ack,
		"GET /v1/topics/{topic}":                f.topicStats,
		"GET /v1/cluster/members":               f.clusterMembers,
		"GET /healthz":                          func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"status":"ok"}`)) },
	}
	for pattern, h := range routes {
		if !f.without[pattern] {
			mux.HandleFunc(pattern, h)
		}
	}
	return mux
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func strict(r *http.Request, v any) error {
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// admit counts a call and reports whether it may go on, answering 429 otherwise; it also
// checks the topic exists. Called without f.mu held.
func (f *fakeNode) admit(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	f.calls++
	if r.Method == http.MethodGet || strings.HasSuffix(r.URL.Path, "/produce") {
		f.pinned[r.URL.Query().Get("partition")]++
	}
	fail := f.failEvery > 0 && f.calls%f.failEvery == 0
	_, exists := f.topics[r.PathValue("topic")]
	if fail {
		f.failed++
	}
	f.mu.Unlock()
	switch {
	case !exists:
		apiError(w, http.StatusNotFound, "unknown topic "+r.PathValue("topic"))
		return false
	case fail:
		apiError(w, http.StatusTooManyRequests, "over the in-flight cap")
		return false
	}
	return true
}

func (f *fakeNode) createTopic(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name       string `json:"name"`
		Partitions int    `json:"partitions"`
	}
	if err := strict(r, &req); err != nil || req.Name == "" {
		apiError(w, http.StatusBadRequest, "bad topic")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.topics[req.Name]; ok {
		apiError(w, http.StatusConflict, "topic exists")
		return
	}
	f.topics[req.Name] = max(req.Partitions, 1)
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"name": req.Name, "partitions": f.topics[req.Name]})
}

// topicStats answers the owners set in f.owners as partition_stats.
func (f *fakeNode) topicStats(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	type stat struct {
		Index int    `json:"index"`
		Owner string `json:"owner_node"`
	}
	stats := make([]stat, len(f.owners))
	for i, o := range f.owners {
		stats[i] = stat{i, o}
	}
	json.NewEncoder(w).Encode(map[string]any{"name": r.PathValue("topic"), "partitions": len(stats),
		"partition_stats": stats})
}

func (f *fakeNode) clusterMembers(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"members": f.members})
}

func (f *fakeNode) enqueue(msgs ...[]byte) {
	f.mu.Lock()
	for _, m := range msgs {
		f.produced++
		if f.dropEvery == 0 || f.produced%f.dropEvery != 0 {
			f.queue = append(f.queue, m)
		}
	}
	close(f.notify)
	f.notify = make(chan struct{})
	f.mu.Unlock()
}

func (f *fakeNode) produce(w http.ResponseWriter, r *http.Request) {
	if !f.admit(w, r) {
		return
	}
	switch r.Header.Get("Content-Type") {
	case "application/octet-stream", "application/json":
	default:
		apiError(w, http.StatusUnsupportedMediaType, "content type")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+1))
	switch {
	case err != nil || len(body) == 0:
		apiError(w, http.StatusBadRequest, "empty body")
		return
	case len(body) > maxMessage:
		apiError(w, http.StatusRequestEntityTooLarge, "too large")
		return
	}
	f.enqueue(body)
	w.WriteHeader(http.StatusAccepted)
}

func (f *fakeNode) produceBatch(w http.ResponseWriter, r *http.Request) {
	if !f.admit(w, r) {
		return
	}
	var req struct {
		Messages []struct {
			Payload         json.RawMessage `json:"payload"`
			PayloadEncoding string          `json:"payload_encoding"`
			Key             string          `json:"key"`
			KeyEncoding     string          `json:"key_encoding"`
			Partition       *int            `json:"partition"`
		} `json:"messages"`
	}
	if err := strict(r, &req); err != nil || len(req.Messages) < 1 || len(req.Messages) > maxBatchMsgs {
		apiError(w, http.StatusBadRequest, "bad batch")
		return
	}
	msgs := make([][]byte, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = m.Payload
		if m.PayloadEncoding == "base64" {
			var s string
			if json.Unmarshal(m.Payload, &s) != nil {
				apiError(w, http.StatusBadRequest, "message "+strconv.Itoa(i)+": payload")
				return
			}
			p, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				apiError(w, http.StatusBadRequest, "message "+strconv.Itoa(i)+": base64")
				return
			}
			msgs[i] = p
		}
	}
	f.enqueue(msgs...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]int{"accepted": len(msgs)})
}

type fakeMessage struct {
	Topic           string `json:"topic"`
	Partition       int    `json:"partition"`
	Offset          int    `json:"offset"`
	Payload         string `json:"payload"`
	PayloadEncoding string `json:"payload_encoding"`
	Timestamp       int64  `json:"timestamp"`
	ReceiptHandle   string `json:"receipt_handle"`
}

func (f *fakeNode) consume(w http.ResponseWriter, r *http.Request) {
	if !f.admit(w, r) {
		return
	}
	q := r.URL.Query()
	wait := time.Duration(0)
	if s := q.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			apiError(w, http.StatusBadRequest, "bad wait")
			return
		}
		wait = min(d, 10*time.Second)
	}
	n, batch := 1, false
	if s := q.Get("max"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 100 {
			apiError(w, http.StatusBadRequest, "bad max")
			return
		}
		n, batch = v, true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []fakeMessage
	for {
		f.mu.Lock()
		for len(out) < n && len(f.queue) > 0 {
			var nonce [16]byte
			rand.Read(nonce[:])
			h := hex.EncodeToString(nonce[:])
			f.leases[h] = true
			out = append(out, fakeMessage{
				Topic: r.PathValue("topic"), Offset: f.nextOff, Timestamp: time.Now().Unix(),
				Payload: base64.StdEncoding.EncodeToString(f.queue[0]), PayloadEncoding: "base64",
				ReceiptHandle: h,
			})
			f.nextOff++
			f.queue = f.queue[1:]
		}
		notify := f.notify
		f.mu.Unlock()
		if len(out) > 0 {
			break
		}
		select {
		case <-notify:
			continue
		case <-timer.C:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if batch {
		json.NewEncoder(w).Encode(map[string]any{"messages": out})
	} else {
		json.NewEncoder(w).Encode(out[0])
	}
}

// settle ends a lease; f.mu held.
func (f *fakeNode) settle(h string) int {
	if !f.leases[h] {
		return http.StatusGone
	}
	delete(f.leases, h)
	f.acked++
	return http.StatusNoContent
}

func (f *fakeNode) ack(w http.ResponseWriter, r *http.Request) {
	if !f.admit(w, r) {
		return
	}
	if h := r.URL.Query().Get("receipt_handle"); h != "" {
		f.mu.Lock()
		status := f.settle(h)
		f.mu.Unlock()
		if status != http.StatusNoContent {
			apiError(w, status, "lease no longer valid")
			return
		}
		w.WriteHeader(status)
		return
	}
	var req struct {
		ReceiptHandles []string `json:"receipt_handles"`
	}
	if err := strict(r, &req); err != nil || len(req.ReceiptHandles) < 1 || len(req.ReceiptHandles) > 100 {
		apiError(w, http.StatusBadRequest, "bad ack batch")
		return
	}
	type result struct {
		Status int    `json:"status"`
		Error  string `json:"error,omitempty"`
	}
	res := make([]result, len(req.ReceiptHandles))
	f.mu.Lock()
	for i, h := range req.ReceiptHandles {
		res[i].Status = f.settle(h)
		if res[i].Status != http.StatusNoContent {
			res[i].Error = "lease no longer valid"
		}
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"results": res})
}

func (f *fakeNode) counts() (produced, acked, failed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.produced, f.acked, f.failed
}

// bench runs narad-bench with -json against addr and returns its exit code, its one
// result and its stderr.
func benchJSON(t *testing.T, addr string, args ...string) (int, Result, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"-addr", addr, "-json"}, args...)
	code := run(context.Background(), args, &out, &errOut)
	var res Result
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%v: output is not one JSON result: %v\n%s", args, err, out.String())
		}
	}
	return code, res, errOut.String()
}

func serve(t *testing.T, f *fakeNode) string {
	t.Helper()
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestModesAgainstFake(t *testing.T) {
	f := newFake()
	addr := serve(t, f)
	cases := []struct {
		name string
		args []string
		mode string
	}{
		{"produce", []string{"-mode", "produce", "-workers", "4", "-size", "100"}, modeProduce},
		{"produce-batch", []string{"-mode", "produce-batch", "-workers", "3", "-batch", "10", "-size", "64"}, modeBatch},
		{"consume-ack single", []string{"-mode", "consume-ack", "-workers", "4", "-batch", "1", "-prefill", "500", "-size", "32"}, modeConsume},
		{"consume-ack batch", []string{"-mode", "consume-ack", "-workers", "2", "-batch", "20", "-prefill", "3000", "-size", "32"}, modeConsume},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			producedBefore, ackedBefore, _ := f.counts()
			code, r, stderr := benchJSON(t, addr, append(c.args, "-duration", "250ms", "-create-topic")...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %s, result %+v", code, stderr, r)
			}
			if r.Mode != c.mode || r.Messages == 0 || r.Requests == 0 || r.Errors != 0 || len(r.Statuses) != 0 {
				t.Fatalf("result %+v", r)
			}
			if r.LatencyN == 0 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms || r.MaxMs < r.P99Ms || r.MsgsPerSec <= 0 {
				t.Fatalf("latency/rates %+v", r)
			}
			produced, acked, _ := f.counts()
			switch c.mode {
			case modeProduce:
				if r.Messages != r.Requests || uint64(produced-producedBefore) < r.Messages {
					t.Fatalf("counted %d of %d requests, fake stored %d", r.Messages, r.Requests, produced-producedBefore)
				}
			case modeBatch:
				if r.Messages != 10*r.Requests || r.Batch != 10 || uint64(produced-producedBefore) < r.Messages {
					t.Fatalf("counted %d in %d requests, fake stored %d", r.Messages, r.Requests, produced-producedBefore)
				}
			case modeConsume:
				// Acks that raced the deadline may have settled without being counted.
				if r.Prefilled == 0 || uint64(acked-ackedBefore) < r.Messages {
					t.Fatalf("counted %d acks, fake settled %d, prefilled %d", r.Messages, acked-ackedBefore, r.Prefilled)
				}
				if r.Requests <= r.Messages/uint64(max(r.Batch, 1)) {
					t.Fatalf("requests %d should cover consumes and acks of %d messages", r.Requests, r.Messages)
				}
			}
		})
	}
}

func TestNon2xxStatusesAreCounted(t *testing.T) {
	f := newFake()
	f.failEvery = 5
	addr := serve(t, f)
	for _, mode := range []string{modeProduce, modeBatch, modeConsume} {
		t.Run(mode, func(t *testing.T) {
			_, _, failedBefore := f.counts()
			code, r, stderr := benchJSON(t, addr, "-mode", mode, "-workers", "3", "-batch", "5",
				"-duration", "200ms", "-create-topic", "-prefill", "2000", "-size", "16")
			_, _, failed := f.counts()
			if code != 1 {
				t.Fatalf("exit %d with errors, want 1; stderr %s", code, stderr)
			}
			if r.Messages == 0 || r.Statuses["429"] == 0 || r.Errors < r.Statuses["429"] || r.MissingRoute != "" {
				t.Fatalf("result %+v", r)
			}
			// Each 429 the fake sent was counted, except ones racing the deadline.
			if r.Statuses["429"] > uint64(failed-failedBefore) {
				t.Fatalf("counted %d 429s, fake sent %d", r.Statuses["429"], failed-failedBefore)
			}
			if !strings.Contains(r.FirstErrors["429"], "over the in-flight cap") {
				t.Fatalf("first error bodies %q", r.FirstErrors)
			}
		})
	}
}

func TestUnknownTopicIsCountedNotAMissingRoute(t *testing.T) {
	addr := serve(t, newFake())
	code, r, _ := benchJSON(t, addr, "-mode", "produce", "-workers", "2", "-duration", "100ms", "-topic", "nope")
	if code != 1 || r.Messages != 0 || r.Statuses["404"] == 0 || r.Statuses["404"] != r.Errors || r.MissingRoute != "" {
		t.Fatalf("exit %d, result %+v", code, r)
	}
	if !strings.Contains(r.FirstErrors["404"], "unknown topic") || !strings.Contains(r.Note, "-create-topic") {
		t.Fatalf("result %+v", r)
	}
}

// A node that serves produce only (like today's daemon) must be reported clearly, and the
// run must stop at once instead of hammering a 404 for its whole duration.
func TestMissingRoutesAreReported(t *testing.T) {
	f := newFake()
	f.topics["bench"] = 3
	f.without = map[string]bool{
		"POST /v1/topics":                       true,
		"POST /v1/topics/{topic}/produce/batch": true,
		"GET /v1/topics/{topic}/consume":        true,
	}
	mux := f.handler().(*http.ServeMux)
	// A path the node knows under another method: the mux answers 405 for GET.
	mux.HandleFunc("POST /v1/topics/{topic}/consume", func(w http.ResponseWriter, _ *http.Request) {})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	start := time.Now()
	code, r, stderr := benchJSON(t, addr, "-mode", "consume-ack", "-workers", "4", "-duration", "20s", "-create-topic")
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a missing route should stop the run early; it took %v", took)
	}
	if code != 1 || !strings.Contains(r.MissingRoute, "GET /v1/topics/bench/consume") || !strings.Contains(r.MissingRoute, "405") {
		t.Fatalf("exit %d, result %+v", code, r)
	}
	if !strings.Contains(stderr, "POST /v1/topics") || !strings.Contains(stderr, "going on") {
		t.Fatalf("create-topic on a node without the route should warn and go on; stderr %q", stderr)
	}

	code, r, _ = benchJSON(t, addr, "-mode", "produce-batch", "-workers", "4", "-duration", "20s")
	if code != 1 || !strings.Contains(r.MissingRoute, "POST /v1/topics/bench/produce/batch") || !strings.Contains(r.MissingRoute, "404") {
		t.Fatalf("exit %d, result %+v", code, r)
	}

	code, r, stderr = benchJSON(t, addr, "-mode", "consume-ack", "-workers", "4", "-duration", "20s", "-prefill", "100")
	if code != 1 || !strings.Contains(r.MissingRoute, "produce/batch") || !strings.Contains(r.Note, "prefill") {
		t.Fatalf("exit %d, result %+v, stderr %s", code, r, stderr)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("missing routes took %v", time.Since(start))
	}

	// cmd/narad answers a route it lacks with a JSON 404 that says so.
	jsonMux := f.handler().(*http.ServeMux)
	jsonMux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	jsonSrv := httptest.NewServer(jsonMux)
	defer jsonSrv.Close()
	code, r, _ = benchJSON(t, strings.TrimPrefix(jsonSrv.URL, "http://"), "-mode", "consume-ack", "-workers", "2", "-duration", "20s")
	if code != 1 || r.MissingRoute != "GET /v1/topics/bench/consume → 404" || !strings.Contains(r.FirstErrors["404"], "no route") {
		t.Fatalf("exit %d, result %+v", code, r)
	}

	// Produce still works against the same node.
	code, r, _ = benchJSON(t, addr, "-mode", "produce", "-workers", "2", "-duration", "100ms")
	if code != 0 || r.Messages == 0 {
		t.Fatalf("exit %d, result %+v", code, r)
	}
}

func TestUnreachableNode(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-addr", addr, "-mode", "produce", "-duration", "5s"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "cannot reach") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

func TestAllSuiteTable(t *testing.T) {
	addr := serve(t, newFake())
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-addr", addr, "-mode", "all", "-duration", "100ms", "-create-topic", "-prefill", "2000"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	var rows []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| run ") {
			rows = append(rows, l)
		}
	}
	t.Log("\n" + out.String())
	if len(rows) != 8 {
		t.Fatalf("want 8 rows:\n%s", out.String())
	}
	for i, want := range []string{"| bare 1KiB ×64 | bare | 64 |", "| produce 1KiB ×1 |", "| produce 1KiB ×256 | produce | 256 |",
		"| batch 100×256B ×16 | produce-batch | 16 | 256 | 100 |", "| consume-ack 100 ×16 | consume-ack | 16 | 256 | 100 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%d: table lacks %q:\n%s", i, want, out.String())
		}
	}
}

func TestWireHelpers(t *testing.T) {
	for _, s := range []string{"", "abc", `q"uote\back`, "ctl\x01\n\t", "ünï"} {
		var got string
		if err := json.Unmarshal(appendJSONString(nil, s), &got); err != nil || got != s {
			t.Errorf("appendJSONString(%q) round-trips to %q, %v", s, got, err)
		}
	}
	var req struct {
		ReceiptHandles []string `json:"receipt_handles"`
	}
	if err := json.Unmarshal(appendAckBody(nil, []string{"a", "b"}), &req); err != nil || len(req.ReceiptHandles) != 2 {
		t.Errorf("ack body: %v %v", req, err)
	}
	for body, want := range map[string]int{`{"accepted":100}`: 100, "{\"accepted\":7}\n": 7, `{ "accepted" : 3 }`: 3} {
		if n, ok := parseAccepted([]byte(body)); !ok || n != want {
			t.Errorf("parseAccepted(%q) = %d, %v", body, n, ok)
		}
	}
	if _, ok := parseAccepted([]byte(`{"nope":1}`)); ok {
		t.Error("parseAccepted accepted a body without accepted")
	}
	b, err := batchBody(3, []byte{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	var batch struct {
		Messages []struct {
			Payload         string `json:"payload"`
			PayloadEncoding string `json:"payload_encoding"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &batch); err != nil || len(batch.Messages) != 3 || batch.Messages[2].Payload != "AAEC" || batch.Messages[2].PayloadEncoding != "base64" {
		t.Errorf("batch body %s: %v", b, err)
	}
	if _, err := batchBody(1000, make([]byte, 1<<20)); err == nil {
		t.Error("a 1000 × 1 MiB batch should be refused")
	}
}
