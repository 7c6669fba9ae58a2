package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Bounds of the waits in these tests: generous, because -race and a loaded CI machine
// slow everything; a wait that reaches its bound fails the test.
const (
	startBound    = 20 * time.Second // the daemon listens and is ready
	exitBound     = 30 * time.Second // the daemon returns after a signal (≥ shutdownTimeout)
	conditionPoll = 5 * time.Millisecond
)

// testDaemon is `narad serve` running in this process, through serve, the function
// runServe calls after parsing the flags: a real listener on 127.0.0.1 (a port chosen by
// the kernel) and real files in a temporary directory.
type testDaemon struct {
	t      *testing.T
	dir    string
	nodeID string
	base   string // http://127.0.0.1:port
	addr   string
	stop   chan os.Signal
	done   chan int // serve's exit status
	status int      // once done delivered
	exited bool
	client *http.Client
	logs   *logSink
}

// startDaemon starts serve on dir with the command-line flags args (after -data, -addr and
// -log-level, which it sets), lets tune change the parsed config, and waits until the
// node listens and answers /readyz 200. The daemon is stopped with SIGTERM at cleanup.
func startDaemon(t *testing.T, dir string, args []string, tune func(*config)) *testDaemon {
	t.Helper()
	return startDaemonWith(t, dir, args, tune, "http://", &http.Transport{MaxIdleConnsPerHost: 16})
}

// startDaemonWith is startDaemon reached at scheme through transport.
func startDaemonWith(t *testing.T, dir string, args []string, tune func(*config), scheme string, transport *http.Transport) *testDaemon {
	t.Helper()
	full := append([]string{"-data", dir, "-addr", "127.0.0.1:0", "-log-level", "info"}, args...)
	return startDaemonArgs(t, dir, full, tune, scheme, transport)
}

// startDaemonArgs is startDaemonWith on the command line full alone (a config file may
// give the data directory and the address).
func startDaemonArgs(t *testing.T, dir string, full []string, tune func(*config), scheme string, transport *http.Transport) *testDaemon {
	t.Helper()
	cfg, err := parseServeFlags(full, io.Discard)
	if err != nil {
		t.Fatalf("parse flags %q: %v", full, err)
	}
	cfg.adminPassword = testAdminPassword
	if tune != nil {
		tune(&cfg)
	}
	d := &testDaemon{
		t: t, dir: dir, nodeID: cfg.nodeID, stop: make(chan os.Signal, 2), done: make(chan int, 1),
		client: &http.Client{Transport: validating(t, transport, !cfg.dev)}, // openapi_test.go
		logs:   &logSink{t: t, listening: make(chan string, 1), ready: make(chan struct{})},
	}
	logger := slog.New(captureHandler{Handler: slog.NewTextHandler(d.logs, &slog.HandlerOptions{Level: cfg.logLevel}), sink: d.logs})
	go func() { d.done <- serve(cfg, logger, d.stop) }()
	t.Cleanup(d.cleanup)
	select {
	case d.addr = <-d.logs.listening:
	case s := <-d.done:
		d.exited, d.status = true, s
		t.Fatalf("serve exited with %d before listening", s)
	case <-time.After(startBound):
		t.Fatalf("serve did not listen within %v", startBound)
	}
	d.base = scheme + d.addr
	select {
	case <-d.logs.ready:
	case <-time.After(startBound):
		t.Fatalf("serve did not log that it is ready within %v", startBound)
	}
	d.waitReady()
	return d
}

// waitReady waits until /readyz answers 200.
func (d *testDaemon) waitReady() {
	d.t.Helper()
	eventually(d.t, startBound, "/readyz answers 200", func() bool {
		r, err := d.try(http.MethodGet, "/readyz", nil, nil)
		return err == nil && r.status == http.StatusOK
	})
}

// signal sends sig as the signal handler of main would.
func (d *testDaemon) signal(sig os.Signal) { d.stop <- sig }

// wait returns serve's exit status, waiting at most bound.
func (d *testDaemon) wait(bound time.Duration) int {
	d.t.Helper()
	if d.exited {
		return d.status
	}
	select {
	case d.status = <-d.done:
		d.exited = true
		d.client.CloseIdleConnections()
		return d.status
	case <-time.After(bound):
		d.t.Fatalf("serve did not return within %v", bound)
		return -1
	}
}

// shutdown sends SIGTERM and returns the exit status.
func (d *testDaemon) shutdown() int {
	d.t.Helper()
	if !d.exited {
		d.signal(syscall.SIGTERM)
	}
	return d.wait(exitBound)
}

func (d *testDaemon) cleanup() {
	if !d.exited {
		d.signal(syscall.SIGTERM)
		select {
		case d.status = <-d.done:
			d.exited = true
		case <-time.After(exitBound):
			panic("narad test: serve did not return at cleanup") // goroutines would leak into later tests
		}
	}
	d.client.CloseIdleConnections()
}

// testAdminPassword is the root user's password of every test daemon and child.
const testAdminPassword = "test-admin-password"

// withCredentials gives req the root user's HTTP Basic credentials, unless it has an
// Authorization header: "-" there sends none.
func withCredentials(req *http.Request) {
	switch req.Header.Get("Authorization") {
	case "":
		req.SetBasicAuth("admin", testAdminPassword)
	case "-":
		req.Header.Del("Authorization")
	}
}

// basicHeader is the root user's Authorization header line, for raw requests.
func basicHeader() string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+testAdminPassword)) + "\r\n"
}

// postAuth is client.Post with the root user's credentials.
func postAuth(client *http.Client, url, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	withCredentials(req)
	return client.Do(req)
}

// reply is a response read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %q", r.status, r.body) }

// try sends a request and reads the whole response.
func (d *testDaemon) try(method, path string, header map[string]string, body []byte) (reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	if err != nil {
		return reply{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return d.send(req)
}

// send sends req with the root user's credentials unless it carries some (or
// anonymous is set on the header map as "Authorization": "-").
func (d *testDaemon) send(req *http.Request) (reply, error) {
	withCredentials(req)
	resp, err := d.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// do is try that fails the test on a transport error.
func (d *testDaemon) do(method, path string, header map[string]string, body []byte) reply {
	d.t.Helper()
	r, err := d.try(method, path, header, body)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// expect sends a request and checks its status; an error status must come with the
// API's JSON error body.
func (d *testDaemon) expect(status int, method, path string, header map[string]string, body []byte) reply {
	d.t.Helper()
	r := d.do(method, path, header, body)
	if r.status != status {
		d.t.Fatalf("%s %s: got %v, want %d", method, path, r, status)
	}
	if status >= 400 {
		wantErrorBody(d.t, r)
	}
	return r
}

// wantErrorBody checks that r carries {"error":"<non-empty message>"} as JSON.
func wantErrorBody(t *testing.T, r reply) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error %v: Content-Type %q, want application/json", r, ct)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := strictDecode(r.body, &e); err != nil || e.Error == "" {
		t.Fatalf("error %v: body is not {\"error\": \"…\"}: %v", r, err)
	}
	return e.Error
}

var (
	octet    = map[string]string{"Content-Type": "application/octet-stream"}
	jsonType = map[string]string{"Content-Type": "application/json"}
)

// produce posts one message and checks its status.
func (d *testDaemon) produce(status int, topic, query string, payload []byte) reply {
	d.t.Helper()
	path := "/v1/topics/" + topic + "/produce"
	if query != "" {
		path += "?" + query
	}
	return d.expect(status, http.MethodPost, path, octet, payload)
}

// createTopic creates a topic from a JSON body and returns it.
func (d *testDaemon) createTopic(body string) topicJSON {
	d.t.Helper()
	r := d.expect(http.StatusCreated, http.MethodPost, "/v1/topics", jsonType, []byte(body))
	var tp topicJSON
	mustDecode(d.t, r.body, &tp)
	return tp
}

// getTopic returns a topic with its partition_stats.
func (d *testDaemon) getTopic(name string) topicJSON {
	d.t.Helper()
	r := d.expect(http.StatusOK, http.MethodGet, "/v1/topics/"+name, nil, nil)
	var tp topicJSON
	mustDecode(d.t, r.body, &tp)
	return tp
}

// produceCommitted produces n messages "<prefix>-<i>" to topic and waits until they are
// committed.
func (d *testDaemon) produceCommitted(topic, prefix string, n int) {
	d.t.Helper()
	for i := range n {
		d.produce(http.StatusAccepted, topic, "", fmt.Appendf(nil, "%s-%d", prefix, i))
	}
	d.waitCommitted(topic, uint64(n))
}

// waitCommitted waits until the topic's partitions hold total records in all (commits
// to the partition logs follow the 202 asynchronously).
func (d *testDaemon) waitCommitted(topic string, total uint64) {
	d.t.Helper()
	var got uint64
	eventually(d.t, startBound, fmt.Sprintf("%s holds %d records", topic, total), func() bool {
		got = 0
		for _, ps := range d.getTopic(topic).PartitionStats {
			got += ps.HighWatermark
		}
		return got >= total
	})
	if got != total {
		d.t.Fatalf("%s holds %d records, want %d", topic, got, total)
	}
}

// consumeOne consumes (single form) with the given query and returns the message; the
// status must be 200.
func (d *testDaemon) consumeOne(topic, query string) messageJSON {
	d.t.Helper()
	r := d.expect(http.StatusOK, http.MethodGet, "/v1/topics/"+topic+"/consume?"+query, nil, nil)
	var m messageJSON
	mustDecode(d.t, r.body, &m)
	return m
}

// consumeMany consumes with max (batch form) and returns the messages; the status must be
// 200.
func (d *testDaemon) consumeMany(topic, query string) []messageJSON {
	d.t.Helper()
	r := d.expect(http.StatusOK, http.MethodGet, "/v1/topics/"+topic+"/consume?"+query, nil, nil)
	var ms struct {
		Messages []messageJSON `json:"messages"`
	}
	mustDecode(d.t, r.body, &ms)
	return ms.Messages
}

// ack acks one receipt handle (mode: "" settles, "true" extends, "0" releases).
func (d *testDaemon) ack(status int, topic, handle, extend string) {
	d.t.Helper()
	path := "/v1/topics/" + topic + "/ack?receipt_handle=" + handle
	if extend != "" {
		path += "&extend=" + extend
	}
	d.expect(status, http.MethodPost, path, nil, nil)
}

// topicJSON is the API's Topic, with partition_stats when a single topic is read.
type topicJSON struct {
	Name                    string      `json:"name"`
	ID                      uint64      `json:"id"`
	Partitions              uint32      `json:"partitions"`
	RetentionMs             int64       `json:"retention_ms"`
	VisibilityTimeoutMs     int64       `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition uint32      `json:"max_in_flight_per_partition"`
	CreatedAt               int64       `json:"created_at"`
	PartitionStats          []partStats `json:"partition_stats"`
}

type partStats struct {
	Index         uint32 `json:"index"`
	HighWatermark uint64 `json:"high_watermark"`
	OldestOffset  uint64 `json:"oldest_offset"`
	NextOffset    uint64 `json:"next_offset"`
	OwnerNode     string `json:"owner_node"`
	SizeBytes     int64  `json:"size_bytes"`
	State         string `json:"state,omitempty"`
	InFlight      int    `json:"in_flight"`
}

// messageJSON is the API's Message.
type messageJSON struct {
	Topic           string          `json:"topic"`
	Partition       uint32          `json:"partition"`
	Offset          uint64          `json:"offset"`
	Key             *string         `json:"key"`
	KeyEncoding     string          `json:"key_encoding"`
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	Timestamp       int64           `json:"timestamp"`
	ReceiptHandle   string          `json:"receipt_handle"`
}

// text is the payload of a message sent as UTF-8 text that is not JSON (the API answers
// it as a JSON string).
func (m messageJSON) text(t *testing.T) string {
	t.Helper()
	var s string
	if m.PayloadEncoding != "" {
		t.Fatalf("message %d/%d: payload_encoding %q, want none", m.Partition, m.Offset, m.PayloadEncoding)
	}
	if err := json.Unmarshal(m.Payload, &s); err != nil {
		t.Fatalf("message %d/%d: payload %s is not a JSON string: %v", m.Partition, m.Offset, m.Payload, err)
	}
	return s
}

// strictDecode decodes exactly one JSON value with no unknown fields: the tests check
// the API's shapes, not only their fields.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

func mustDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := strictDecode(b, v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
}

// eventually polls cond until it holds, failing the test after bound.
func eventually(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(conditionPoll)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for: %s", bound, what)
		}
		<-tick.C
	}
}

// dialRefused reports whether a new connection to addr is refused: the listener is
// closed, so shutdown has begun.
func dialRefused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// rawConn is one TCP connection written by hand, to hold a request half sent.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (d *testDaemon) dialRaw() *rawConn {
	d.t.Helper()
	c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { c.Close() })
	return &rawConn{t: d.t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) write(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// response reads one response (bounded) and closes the connection.
func (rc *rawConn) response(method string) reply {
	rc.t.Helper()
	defer rc.c.Close()
	if err := rc.c.SetReadDeadline(time.Now().Add(exitBound)); err != nil {
		rc.t.Fatal(err)
	}
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("read response body: %v", err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// logSink collects the daemon's log lines and copies them to the test log.
type logSink struct {
	t         *testing.T
	mu        sync.Mutex
	lines     []string
	listening chan string   // the addr of the "listening" line
	ready     chan struct{} // closed at the "ready" line
	readyOnce sync.Once
}

func (s *logSink) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	s.mu.Lock()
	s.lines = append(s.lines, line)
	s.mu.Unlock()
	s.t.Log(line)
	return len(p), nil
}

// has reports whether a line containing every one of parts was logged.
// snapshot returns the lines logged so far.
func (s *logSink) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

func (s *logSink) has(parts ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// captureHandler passes records to a text handler and catches the listen address.
type captureHandler struct {
	slog.Handler
	sink *logSink
}

func (h captureHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "ready" {
		defer h.sink.readyOnce.Do(func() { close(h.sink.ready) }) // once the line is in lines
	}
	if r.Message == "listening" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.sink.listening <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return captureHandler{Handler: h.Handler.WithAttrs(as), sink: h.sink}
}

func (h captureHandler) WithGroup(name string) slog.Handler {
	return captureHandler{Handler: h.Handler.WithGroup(name), sink: h.sink}
}
