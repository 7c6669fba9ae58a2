package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/io/walshell"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type testNode struct {
	dir string
	srv *server
	ts  *httptest.Server
}

// startNode opens a server on a fresh data directory behind an httptest server.
func startNode(t *testing.T) *testNode {
	t.Helper()
	dir := t.TempDir()
	srv, err := newServer(config{data: dir, addr: "unused"}, testLogger(t))
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	n := &testNode{dir: dir, srv: srv, ts: httptest.NewServer(srv.Handler())}
	t.Cleanup(n.stop)
	return n
}

// stop closes the HTTP server (waiting for its requests), then the WAL. Idempotent.
func (n *testNode) stop() {
	n.ts.Close()
	if err := n.srv.Close(); err != nil {
		panic(fmt.Sprintf("close server: %v", err))
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return newLogger(tWriter{t}, slog.LevelDebug)
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// recovered stops the node and reopens its WAL, returning every record in it.
func (n *testNode) recovered(t *testing.T) []wal.Record {
	t.Helper()
	n.stop()
	shell, rec, err := walshell.Open(n.dir, wal.Config{})
	if err != nil {
		t.Fatalf("reopen WAL: %v", err)
	}
	if err := shell.Close(); err != nil {
		t.Fatalf("close reopened WAL: %v", err)
	}
	return rec.Records
}

type reply struct {
	status int
	ctype  string
	body   []byte
}

func do(t *testing.T, method, url string, header map[string]string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	return reply{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

var octet = map[string]string{"Content-Type": "application/octet-stream"}

func (n *testNode) produce(t *testing.T, pathAndQuery string, header map[string]string, body string) reply {
	t.Helper()
	return do(t, http.MethodPost, n.ts.URL+pathAndQuery, header, strings.NewReader(body))
}

// wantJSON checks the status, the JSON content type and that the body decodes to want's
// keys with the given values ("*" matches any non-empty value).
func wantJSON(t *testing.T, r reply, status int, want map[string]string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (body %s)", r.status, status, r.body)
	}
	if r.ctype != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", r.ctype)
	}
	var got map[string]string
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %q is not a JSON object of strings: %v", r.body, err)
	}
	if len(got) != len(want) {
		t.Fatalf("body %s, want keys of %v", r.body, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g == "" || (v != "*" && g != v) {
			t.Fatalf("body %s: %q = %q, want %q", r.body, k, g, v)
		}
	}
}

func TestProduceIsDurable(t *testing.T) {
	n := startNode(t)
	r := n.produce(t, "/v1/topics/orders.v1_x-y/produce?key=cust-42", octet, "hello")
	if r.status != http.StatusAccepted || len(r.body) != 0 {
		t.Fatalf("produce: %d %q, want 202 with an empty body", r.status, r.body)
	}
	recs := n.recovered(t)
	if len(recs) != 1 {
		t.Fatalf("recovered %d records, want 1", len(recs))
	}
	got := recs[0]
	h := fnv.New32a()
	h.Write([]byte("cust-42"))
	if got.Topic != "orders.v1_x-y" || string(got.Payload) != "hello" || !got.HasKey ||
		string(got.Key) != "cust-42" || got.Partition != h.Sum32()%3 || got.TimestampMs == 0 {
		t.Fatalf("recovered %+v", got)
	}
}

func TestProducePartitionChoice(t *testing.T) {
	n := startNode(t)
	jsonCT := map[string]string{"Content-Type": "application/json; charset=utf-8"}
	client := map[string]string{"X-Narad-Client": "test/1"} // no Content-Type at all
	steps := []struct {
		query  string
		header map[string]string
	}{
		{"?partition=7&key=k", octet}, // the partition wins over the key
		{"", jsonCT},                  // round-robin: 0
		{"", client},                  // 1
		{"", octet},                   // 2
		{"", octet},                   // 0
		{"?key=", octet},              // an empty key is a key
	}
	for i, s := range steps {
		r := n.produce(t, "/v1/topics/t/produce"+s.query, s.header, fmt.Sprint(i))
		if r.status != http.StatusAccepted {
			t.Fatalf("step %d: status %d body %s", i, r.status, r.body)
		}
	}
	recs := n.recovered(t)
	emptyKey := fnv.New32a().Sum32() % 3
	want := []struct {
		partition uint32
		hasKey    bool
	}{{7, true}, {0, false}, {1, false}, {2, false}, {0, false}, {emptyKey, true}}
	if len(recs) != len(want) {
		t.Fatalf("recovered %d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := recs[i]
		if string(r.Payload) != fmt.Sprint(i) || r.Partition != w.partition || r.HasKey != w.hasKey {
			t.Errorf("record %d: payload %q partition %d hasKey %v, want partition %d hasKey %v",
				i, r.Payload, r.Partition, r.HasKey, w.partition, w.hasKey)
		}
	}
}

// chunked hides the length of its body, so the client sends it chunked.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestProduceErrors(t *testing.T) {
	n := startNode(t)
	big := strings.Repeat("x", wal.PayloadBytesMax+1)
	tests := []struct {
		name, path string
		header     map[string]string
		body       io.Reader
		status     int
	}{
		{"empty body", "/v1/topics/t/produce", octet, strings.NewReader(""), 400},
		{"bad topic char", "/v1/topics/a%20b/produce", octet, strings.NewReader("x"), 400},
		{"bad topic slash", "/v1/topics/a%2Fb/produce", octet, strings.NewReader("x"), 400},
		{"topic too long", "/v1/topics/" + strings.Repeat("a", 201) + "/produce", octet, strings.NewReader("x"), 400},
		{"negative partition", "/v1/topics/t/produce?partition=-1", octet, strings.NewReader("x"), 400},
		{"partition not a number", "/v1/topics/t/produce?partition=one", octet, strings.NewReader("x"), 400},
		{"partition empty", "/v1/topics/t/produce?partition=", octet, strings.NewReader("x"), 400},
		{"partition over uint32", "/v1/topics/t/produce?partition=4294967296", octet, strings.NewReader("x"), 400},
		{"partition twice", "/v1/topics/t/produce?partition=1&partition=2", octet, strings.NewReader("x"), 400},
		{"unknown parameter", "/v1/topics/t/produce?partiton=1", octet, strings.NewReader("x"), 400},
		{"malformed query", "/v1/topics/t/produce?key=%zz", octet, strings.NewReader("x"), 400},
		{"key too long", "/v1/topics/t/produce?key=" + strings.Repeat("k", wal.KeyBytesMax+1), octet, strings.NewReader("x"), 400},
		{"body over 1 MiB", "/v1/topics/t/produce", octet, strings.NewReader(big), 413},
		{"chunked body over 1 MiB", "/v1/topics/t/produce", octet, chunked{strings.NewReader(big)}, 413},
		{"no content type", "/v1/topics/t/produce", nil, strings.NewReader("x"), 415},
		{"text content type", "/v1/topics/t/produce", map[string]string{"Content-Type": "text/plain"}, strings.NewReader("x"), 415},
		{"unknown v1 route", "/v1/nope", octet, strings.NewReader("x"), 404},
		{"produce path with a suffix", "/v1/topics/t/produce/more", octet, strings.NewReader("x"), 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, n.ts.URL+tc.path, tc.header, tc.body)
			wantJSON(t, r, tc.status, map[string]string{"error": "*"})
		})
	}
	r := do(t, http.MethodGet, n.ts.URL+"/v1/topics/t/produce", nil, nil)
	wantJSON(t, r, http.StatusMethodNotAllowed, map[string]string{"error": "*"})
	// Accepted at exactly the limits.
	r = n.produce(t, "/v1/topics/"+strings.Repeat("a", 200)+"/produce?key="+strings.Repeat("k", wal.KeyBytesMax),
		octet, big[:wal.PayloadBytesMax])
	if r.status != http.StatusAccepted {
		t.Fatalf("produce at the limits: %d %s", r.status, r.body)
	}
	if recs := n.recovered(t); len(recs) != 1 {
		t.Fatalf("recovered %d records, want only the one at the limits", len(recs))
	}
}

func TestValidTopic(t *testing.T) {
	for name, want := range map[string]bool{
		"": false, ".": false, "..": false, "...": true, "a": true, "A-z_0.9": true,
		"a b": false, "a/b": false, "é": false, strings.Repeat("a", 200): true, strings.Repeat("a", 201): false,
	} {
		if got := validTopic(name); got != want {
			t.Errorf("validTopic(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	n := startNode(t)
	wantJSON(t, do(t, http.MethodGet, n.ts.URL+"/healthz", nil, nil), 200, map[string]string{"status": "ok"})
	wantJSON(t, do(t, http.MethodGet, n.ts.URL+"/readyz", nil, nil), 200, map[string]string{"status": "ready"})
	wantJSON(t, do(t, http.MethodPost, n.ts.URL+"/healthz", nil, nil), 405, map[string]string{"error": "*"})

	n.srv.beginShutdown()
	wantJSON(t, do(t, http.MethodGet, n.ts.URL+"/healthz", nil, nil), 503, map[string]string{"status": "shutting down"})
	wantJSON(t, do(t, http.MethodGet, n.ts.URL+"/readyz", nil, nil), 503, map[string]string{"error": "shutting down"})
	r := n.produce(t, "/v1/topics/t/produce", octet, "late")
	wantJSON(t, r, 503, map[string]string{"error": "node shutting down"})
	if recs := n.recovered(t); len(recs) != 0 {
		t.Fatalf("recovered %d records after refused produces, want 0", len(recs))
	}
}

// With the WAL closed under it (the shutdown flag not set), produce answers 503 from
// walshell.ErrClosed.
func TestProduceAfterWALClosed(t *testing.T) {
	n := startNode(t)
	if err := n.srv.wal.Close(); err != nil {
		t.Fatal(err)
	}
	wantJSON(t, n.produce(t, "/v1/topics/t/produce", octet, "x"), 503, map[string]string{"error": "node shutting down"})
}

func TestAppendErrorMapping(t *testing.T) {
	srv := &server{log: testLogger(t)}
	for _, tc := range []struct {
		err    error
		status int
	}{
		{wal.ErrFull, 429},
		{fmt.Errorf("%w: fdatasync: EIO", wal.ErrFailed), 500},
		{walshell.ErrClosed, 503},
		{wal.ErrKeyTooLong, 400},
		{errors.New("something else"), 500},
	} {
		w := httptest.NewRecorder()
		srv.appendFailed(w, httptest.NewRequest(http.MethodPost, "/v1/topics/t/produce", nil), tc.err)
		wantJSON(t, reply{w.Code, w.Header().Get("Content-Type"), w.Body.Bytes()}, tc.status,
			map[string]string{"error": "*"})
	}
}

func TestConcurrentProduces(t *testing.T) {
	n := startNode(t)
	const workers, each = 64, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				url := fmt.Sprintf("%s/v1/topics/load/produce?key=w%d", n.ts.URL, g)
				resp, err := http.Post(url, "application/octet-stream", strings.NewReader(fmt.Sprintf("%d/%d", g, i)))
				if err != nil {
					errs <- err
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					errs <- fmt.Errorf("worker %d message %d: status %d", g, i, resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for _, r := range n.recovered(t) {
		seen[string(r.Payload)] = true
	}
	for g := range workers {
		for i := range each {
			if p := fmt.Sprintf("%d/%d", g, i); !seen[p] {
				t.Errorf("payload %s not recovered", p)
			}
		}
	}
	if len(seen) != workers*each {
		t.Errorf("recovered %d distinct payloads, want %d", len(seen), workers*each)
	}
}

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"serve", "-no-such-flag"}, {"serve", "-log-level", "loud"}} {
		var stdout, stderr bytes.Buffer
		if got := run(args, &stdout, &stderr, nil); got != 2 {
			t.Errorf("run(%q) = %d, want 2", args, got)
		}
		if stderr.Len() == 0 {
			t.Errorf("run(%q) printed nothing to stderr", args)
		}
	}
	var stdout, stderr bytes.Buffer
	if got := run([]string{"version"}, &stdout, &stderr, nil); got != 0 || !strings.HasPrefix(stdout.String(), "narad ") {
		t.Errorf("version: status %d output %q", got, stdout.String())
	}
}

func TestServeFlagsFromEnvironment(t *testing.T) {
	t.Setenv("NARAD_DATA", "/env/data")
	t.Setenv("NARAD_ADDR", "127.0.0.1:1")
	t.Setenv("NARAD_LOG_LEVEL", "warn")
	cfg, err := parseServeFlags(nil, io.Discard)
	if err != nil || cfg.data != "/env/data" || cfg.addr != "127.0.0.1:1" || cfg.logLevel != slog.LevelWarn {
		t.Fatalf("from the environment: %+v %v", cfg, err)
	}
	cfg, err = parseServeFlags([]string{"-data", "d", "-addr", ":2", "-log-level", "debug"}, io.Discard)
	if err != nil || cfg.data != "d" || cfg.addr != ":2" || cfg.logLevel != slog.LevelDebug {
		t.Fatalf("flags over the environment: %+v %v", cfg, err)
	}
}

// TestRunServe runs `narad serve` as main does, produces through it, stops it with a
// signal and checks the exit status and that the record is in the WAL.
func TestRunServe(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan os.Signal, 1)
	pr, pw := io.Pipe()
	status := make(chan int, 1)
	go func() {
		status <- run([]string{"serve", "-data", dir, "-addr", "127.0.0.1:0", "-log-level", "debug"}, io.Discard, pw, stop)
		pw.Close()
	}()
	addr := make(chan string, 1)
	logDone := make(chan struct{})
	go func() { // read the listen address from the logs, then drain them into the test log
		defer close(logDone)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			t.Log(line)
			if strings.Contains(line, "msg=listening") {
				_, a, _ := strings.Cut(line, " addr=")
				addr <- a
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case s := <-status:
		t.Fatalf("serve exited with %d before listening", s)
	}
	r := do(t, http.MethodPost, base+"/v1/topics/demo/produce", octet, strings.NewReader("hello"))
	if r.status != http.StatusAccepted {
		t.Fatalf("produce: %d %s", r.status, r.body)
	}
	http.DefaultClient.CloseIdleConnections()
	stop <- syscall.SIGTERM
	if s := <-status; s != 0 {
		t.Fatalf("serve exited with %d, want 0", s)
	}
	<-logDone
	shell, rec, err := walshell.Open(dir, wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer shell.Close()
	if len(rec.Records) != 1 || string(rec.Records[0].Payload) != "hello" {
		t.Fatalf("recovered %+v, want the one record", rec.Records)
	}
}
