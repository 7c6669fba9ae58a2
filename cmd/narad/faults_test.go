package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/core/node"
)

// holdProduce sends a produce's headers and the first byte of its 2-byte body on its own
// connection and returns it: the server is in the handler (a produce permit taken,
// reading the body) until finish sends the last byte.
func (d *testDaemon) holdProduce(topic string) *rawConn {
	d.t.Helper()
	rc := d.dialRaw()
	rc.write("POST /v1/topics/" + topic + "/produce HTTP/1.1\r\nHost: narad\r\n" + basicHeader() +
		"Content-Type: application/octet-stream\r\nContent-Length: 2\r\n\r\nh")
	return rc
}

func (rc *rawConn) finish() reply {
	rc.t.Helper()
	rc.write("x")
	return rc.response(http.MethodPost)
}

// TestProduceInFlightCap: with -produce-inflight-max 2 and two produces held in flight, a
// third produce (single or batch) is answered 429 at once; once they finish, produces
// are accepted again.
func TestProduceInFlightCap(t *testing.T) {
	d := startDaemon(t, t.TempDir(), []string{"-produce-inflight-max", "2"}, nil)
	d.createTopic(`{"name":"cap","partitions":1}`)
	const attemptsMax = 5
	for attempt := 1; ; attempt++ {
		held := []*rawConn{d.holdProduce("cap"), d.holdProduce("cap")}
		// Probe with empty produces: each takes a permit for an instant and is refused
		// 400 (empty body) while a permit is free, 429 once both held requests have theirs.
		eventually(t, startBound, "a produce is refused 429", func() bool {
			r := d.do(http.MethodPost, "/v1/topics/cap/produce", octet, nil)
			if r.status != http.StatusBadRequest && r.status != http.StatusTooManyRequests {
				t.Fatalf("probe: %v", r)
			}
			return r.status == http.StatusTooManyRequests
		})
		r := d.produce(http.StatusTooManyRequests, "cap", "", []byte("over the cap"))
		if !strings.Contains(wantErrorBody(t, r), "in-flight") {
			t.Errorf("429 message: %s", r.body)
		}
		d.expect(http.StatusTooManyRequests, http.MethodPost, "/v1/topics/cap/produce/batch", jsonType, []byte(`{"messages":[{"payload":1}]}`))
		statuses := []int{held[0].finish().status, held[1].finish().status}
		if statuses[0] == http.StatusAccepted && statuses[1] == http.StatusAccepted {
			break
		}
		// A probe took the last permit at the instant a held request asked for it: that
		// one was refused instead. Rare; try again.
		t.Logf("attempt %d: held produces answered %v", attempt, statuses)
		if attempt == attemptsMax {
			t.Fatalf("held produces answered %v in %d attempts, want 202", statuses, attemptsMax)
		}
	}
	d.produce(http.StatusAccepted, "cap", "", []byte("under the cap"))
	body := string(d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body)
	if !strings.Contains(body, `narad_http_requests_total{route="POST /v1/topics/{topic}/produce",status="429"}`) {
		t.Errorf("/metrics does not count the 429s")
	}
}

// TestWALFailure provokes a real I/O error in the ingress WAL: a directory sits where the
// WAL's next segment must be created, so its rotation fails (EISDIR, even for root). The
// node fails; a produce being served then is answered 500; the daemon exits with status 1;
// a restart on the same directory (the obstacle removed) recovers every record that was
// answered 202.
func TestWALFailure(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, nil)
	d.createTopic(`{"name":"w","partitions":1}`)
	d.produce(http.StatusAccepted, "w", "", []byte("before the fault"))
	d.waitCommitted("w", 1)
	// The next segment is named after the first seq it will hold: block every name the
	// rotation can pick.
	walDir := filepath.Join(dir, "wal")
	names, err := filepath.Glob(filepath.Join(walDir, "*.seg"))
	if err != nil || len(names) == 0 {
		t.Fatalf("WAL segments: %q %v", names, err)
	}
	var last uint64
	for _, n := range names {
		seq, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(n), ".seg"), 16, 64)
		if err != nil {
			t.Fatalf("segment name %s: %v", n, err)
		}
		last = max(last, seq)
	}
	var blockers []string
	for seq := last + 1; seq <= last+64; seq++ {
		b := filepath.Join(walDir, fmt.Sprintf("%016x.seg", seq))
		if err := os.Mkdir(b, 0o755); err != nil {
			t.Fatal(err)
		}
		blockers = append(blockers, b)
	}
	held := d.holdProduce("w")
	// A segment past 1 MiB whose records are all dispatched is rotated: this produce is
	// durable (202), then the rotation fails and with it the node.
	d.produce(http.StatusAccepted, "w", "", bytes.Repeat([]byte("f"), 1<<20))
	eventually(t, startBound, "the daemon stops listening after the node failed", func() bool { return dialRefused(d.addr) })
	r := held.finish()
	if r.status != http.StatusInternalServerError {
		t.Fatalf("produce on a failed WAL: %v, want 500", r)
	}
	if msg := wantErrorBody(t, r); !strings.Contains(msg, node.ErrWALFailed.Error()) {
		t.Errorf("500 message %q does not say the WAL failed", msg)
	}
	if s := d.wait(exitBound); s != 1 {
		t.Fatalf("serve exited with %d after the node failed, want 1", s)
	}
	if !d.logs.has("level=ERROR", "node failed", "is a directory") {
		t.Errorf("no error line naming the failure")
	}

	for _, b := range blockers {
		if err := os.Remove(b); err != nil {
			t.Fatal(err)
		}
	}
	// The failed node flushed nothing on its way out: the restart may replay records that
	// were already committed (duplicates, never loss).
	d2 := startDaemon(t, dir, nil, nil)
	eventually(t, startBound, "the restarted node has dispatched what its WAL held", func() bool {
		return metricValue(t, string(d2.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body), "narad_dispatcher_backlog_records") == 0
	})
	got := map[string]int{}
	for {
		r := d2.do(http.MethodGet, "/v1/topics/w/consume?max=100", nil, nil)
		if r.status == http.StatusNoContent {
			break
		}
		var page struct {
			Messages []messageJSON `json:"messages"`
		}
		mustDecode(t, r.body, &page)
		for _, m := range page.Messages {
			got[m.text(t)]++
		}
	}
	if got["before the fault"] == 0 || got[strings.Repeat("f", 1<<20)] == 0 || len(got) != 2 {
		t.Errorf("after restart: %d distinct records, want the 2 answered 202", len(got))
	}
	t.Logf("after restart: delivered %v times", []int{got["before the fault"], got[strings.Repeat("f", 1<<20)]})
}

// waitInFlight waits until n requests besides the scrape that reads the count are being
// served.
func (d *testDaemon) waitInFlight(n int) {
	d.t.Helper()
	eventually(d.t, startBound, fmt.Sprintf("%d requests in flight", n), func() bool {
		r, err := d.try(http.MethodGet, "/metrics", nil, nil)
		return err == nil && bytes.Contains(r.body, fmt.Appendf(nil, "\nnarad_http_requests_in_flight %d\n", n+1))
	})
}

// TestShutdownAndRestart: after SIGTERM, while a produce begun before it is still being
// served, the daemon drains: /healthz, /readyz and every /v1 route answer 503 and
// /metrics still 200; the produce in flight is answered 202; then the daemon exits 0. A
// restart on the same directory keeps the topics, the records and the acks (an acked
// record is not delivered again, an unacked one is).
func TestShutdownAndRestart(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, nil)
	d.createTopic(`{"name":"s","partitions":1}`)
	d.produceCommitted("s", "s", 3)
	ms := d.consumeMany("s", "max=2")
	if len(ms) != 2 {
		t.Fatalf("consumed %d of 2", len(ms))
	}
	d.ack(http.StatusNoContent, "s", ms[0].ReceiptHandle, "") // s-0 acked, s-1 leased, s-2 not

	held := d.holdProduce("s")
	d.waitInFlight(1)
	d.signal(syscall.SIGTERM)
	eventually(t, startBound, "/healthz answers 503 after SIGTERM", func() bool {
		r, err := d.try(http.MethodGet, "/healthz", nil, nil)
		return err == nil && r.status == http.StatusServiceUnavailable
	})
	for _, rq := range []struct{ method, path, body string }{
		{http.MethodGet, "/healthz", ""},
		{http.MethodGet, "/readyz", ""},
		{http.MethodPost, "/v1/topics/s/produce", "late"},
		{http.MethodPost, "/v1/topics/s/produce/batch", `{"messages":[{"payload":1}]}`},
		{http.MethodGet, "/v1/topics/s/consume", ""},
		{http.MethodPost, "/v1/topics/s/ack?receipt_handle=" + ms[1].ReceiptHandle, ""},
		{http.MethodGet, "/v1/topics", ""},
		{http.MethodPost, "/v1/topics", `{"name":"late"}`},
		{http.MethodGet, "/v1/topics/s", ""},
		{http.MethodPatch, "/v1/topics/s", `{"partitions":2}`},
		{http.MethodDelete, "/v1/topics/s", ""},
	} {
		var body []byte
		if rq.body != "" {
			body = []byte(rq.body)
		}
		r := d.expect(http.StatusServiceUnavailable, rq.method, rq.path, octet, body)
		if msg := wantErrorBody(t, r); !strings.Contains(msg, "shutting down") {
			t.Errorf("%s %s during shutdown: message %q", rq.method, rq.path, msg)
		}
	}
	d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil)
	if r := held.finish(); r.status != http.StatusAccepted {
		t.Fatalf("produce in flight at SIGTERM: %v, want 202", r)
	}
	if s := d.wait(exitBound); s != 0 {
		t.Fatalf("serve exited with %d after SIGTERM, want 0", s)
	}
	if !d.logs.has("msg=stopped", "status=0") || !d.logs.has(`msg="shutting down"`, "signal=terminated") ||
		!d.logs.has(`msg="draining`, "requests=") { // (1, the held produce, or more: a /healthz poll may be in flight)
		t.Errorf("no shutdown lines in the log")
	}

	d2 := startDaemon(t, dir, nil, nil)
	if !d2.logs.has("msg=ready", "recovery=", "data="+dir, "addr="+d2.addr) {
		t.Errorf("no startup line with the data dir, address and recovery time")
	}
	d2.waitCommitted("s", 4)
	var got []string
	for _, m := range d2.consumeMany("s", "max=10") {
		got = append(got, m.text(t))
	}
	if strings.Join(got, ",") != "s-1,s-2,hx" {
		t.Errorf("after restart delivered %q, want s-1 (its lease lost with the restart), s-2 and hx (answered 202 during the drain), not the acked s-0", got)
	}
	if s := d2.shutdown(); s != 0 {
		t.Fatalf("second run exited with %d", s)
	}
}

// TestSecondSignal: a long poll holds the drain; a second signal stops waiting for it and
// cuts its connection.
func TestSecondSignal(t *testing.T) {
	d := startDaemon(t, t.TempDir(), nil, nil)
	d.createTopic(`{"name":"idle"}`)
	polled := make(chan error, 1)
	go func() {
		r, err := d.try(http.MethodGet, "/v1/topics/idle/consume?wait=10s", nil, nil)
		if err == nil {
			err = fmt.Errorf("answered %v", r)
		}
		polled <- err
	}()
	d.waitInFlight(1)
	start := time.Now()
	d.signal(syscall.SIGTERM)
	eventually(t, startBound, "/healthz answers 503 after SIGTERM", func() bool {
		r, err := d.try(http.MethodGet, "/healthz", nil, nil)
		return err == nil && r.status == http.StatusServiceUnavailable
	})
	d.signal(syscall.SIGINT)
	if s := d.wait(exitBound); s != 0 {
		t.Fatalf("serve exited with %d, want 0", s)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %v after the second signal, want well under the 10 s long poll", took)
	}
	if !d.logs.has("another signal", "signal=interrupt") {
		t.Errorf("the second signal was not logged")
	}
	if err := <-polled; err == nil || strings.HasPrefix(err.Error(), "answered") {
		t.Errorf("long poll: %v, want its connection cut", err)
	}
}

// TestRetentionRemovedOffset: with small partition segments and a topic kept 1 ms, the
// oldest segment is removed; replaying an offset in it answers 410, the oldest kept one
// 200.
func TestRetentionRemovedOffset(t *testing.T) {
	d := startDaemon(t, t.TempDir(), nil, func(c *config) { c.node.PartitionSegmentBytesMax = 64 << 10 })
	d.createTopic(`{"name":"r","partitions":1,"retention_ms":1}`)
	payload := bytes.Repeat([]byte("r"), 40<<10)
	for i := range 4 {
		d.produce(http.StatusAccepted, "r", "", payload)
		d.waitCommitted("r", uint64(i+1)) // one commit per record: segments roll between them
	}
	var oldest uint64
	eventually(t, startBound, "retention removes the oldest segment", func() bool {
		oldest = d.getTopic("r").PartitionStats[0].OldestOffset
		return oldest > 0
	})
	d.expect(http.StatusGone, http.MethodGet, "/v1/topics/r/consume?partition=0&offset=0", nil, nil)
	d.expect(http.StatusGone, http.MethodGet, fmt.Sprintf("/v1/topics/r/consume?partition=0&offset=%d", oldest-1), nil, nil)
	m := d.consumeOne("r", fmt.Sprintf("partition=0&offset=%d", oldest))
	if m.Offset != oldest || m.text(t) != string(payload) {
		t.Errorf("replay of the oldest kept offset %d: offset %d", oldest, m.Offset)
	}
}

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"serve", "-no-such-flag"}, {"serve", "-log-level", "loud"},
		{"serve", "-produce-inflight-max", "-1"}, {"serve", "-produce-inflight-max", "many"}, {"serve", "extra"}} {
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
	stdout.Reset()
	if got := run([]string{"help"}, &stdout, &stderr, nil); got != 0 || !strings.Contains(stdout.String(), "-produce-inflight-max") {
		t.Errorf("help: status %d output %q", got, stdout.String())
	}
}

func TestServeFlags(t *testing.T) {
	cfg, err := parseServeFlags(nil, io.Discard)
	if err != nil || cfg.data != "./data" || cfg.addr != "127.0.0.1:7942" || cfg.logLevel != slog.LevelInfo ||
		cfg.produceInFlightMax != 0 || cfg.nodeID == "" {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	t.Setenv("NARAD_DATA", "/env/data")
	t.Setenv("NARAD_ADDR", "127.0.0.1:1")
	t.Setenv("NARAD_LOG_LEVEL", "warn")
	t.Setenv("NARAD_NODE_ID", "env-node")
	t.Setenv("NARAD_PRODUCE_INFLIGHT_MAX", "64")
	cfg, err = parseServeFlags(nil, io.Discard)
	if err != nil || cfg.data != "/env/data" || cfg.addr != "127.0.0.1:1" || cfg.logLevel != slog.LevelWarn ||
		cfg.nodeID != "env-node" || cfg.produceInFlightMax != 64 {
		t.Fatalf("from the environment: %+v %v", cfg, err)
	}
	cfg, err = parseServeFlags([]string{"-data", "d", "-addr", ":2", "-log-level", "debug", "-node-id", "n",
		"-produce-inflight-max", "3"}, io.Discard)
	if err != nil || cfg.data != "d" || cfg.addr != ":2" || cfg.logLevel != slog.LevelDebug || cfg.nodeID != "n" ||
		cfg.produceInFlightMax != 3 {
		t.Fatalf("flags over the environment: %+v %v", cfg, err)
	}
	t.Setenv("NARAD_PRODUCE_INFLIGHT_MAX", "x")
	if _, err := parseServeFlags(nil, io.Discard); err == nil {
		t.Fatalf("a malformed NARAD_PRODUCE_INFLIGHT_MAX was accepted")
	}
}

// TestRunServe runs `narad serve` from its command line as main does, stops it with a
// signal and checks the exit status and the log lines.
func TestRunServe(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan os.Signal, 1)
	pr, pw := io.Pipe()
	status := make(chan int, 1)
	go func() {
		status <- run([]string{"serve", "-data", dir, "-addr", "127.0.0.1:0"}, io.Discard, pw, stop)
		pw.Close()
	}()
	addr := make(chan string, 1)
	ready := make(chan struct{})
	var lines []string
	logDone := make(chan struct{})
	go func() { // read the listen address and readiness from the logs, keep the lines
		defer close(logDone)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			if _, rest, ok := strings.Cut(line, " msg=listening addr="); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
			if strings.Contains(line, " msg=ready ") {
				close(ready)
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case s := <-status:
		t.Fatalf("serve exited with %d before listening", s)
	case <-time.After(startBound):
		t.Fatalf("serve did not listen within %v", startBound)
	}
	select {
	case <-ready:
	case <-time.After(startBound):
		t.Fatalf("no ready line within %v", startBound)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(base + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz once ready was logged: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	stop <- syscall.SIGINT
	select {
	case s := <-status:
		if s != 0 {
			t.Fatalf("serve exited with %d, want 0", s)
		}
	case <-time.After(exitBound):
		t.Fatalf("serve did not return within %v of SIGINT", exitBound)
	}
	<-logDone
	all := strings.Join(lines, "\n")
	for _, want := range []string{"msg=starting", "msg=ready", "recovery=", "data=" + dir, `msg="shutting down" signal=interrupt`, "msg=stopped status=0"} {
		if !strings.Contains(all, want) {
			t.Errorf("logs have no %q:\n%s", want, all)
		}
	}
}
