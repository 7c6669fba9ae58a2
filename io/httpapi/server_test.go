package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/narad/narad/core/node"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a Server on a fake broker behind a real HTTP server. It has two topics:
// "orders" (3 empty partitions) and "full" (1 partition holding a JSON record, a text
// record and a binary record at offsets 0..2, of which offset 0 was removed by retention,
// so offsets 1 and 2 are available).
type fixture struct {
	t   *testing.T
	fb  *fakeBroker
	s   *Server
	srv *httptest.Server
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	fb := newFakeBroker()
	fb.addTopic("orders", 3)
	full := fb.addTopic("full", 1)
	full.parts[0] = []fakeRecord{
		{payload: []byte(`{"n":0}`), tsMs: fakeNowMs},
		{key: []byte("k1"), hasKey: true, payload: []byte("hello"), tsMs: fakeNowMs},
		{key: []byte{0xff}, hasKey: true, payload: []byte{0xff, 0x00, 0xfe}, tsMs: fakeNowMs},
	}
	full.oldest[0] = 1
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := New(fb, opts)
	s.checkAnswer = func(r *http.Request, rt *route, status int) {
		if !slices.Contains(rt.statuses, status) {
			t.Errorf("%s %s answered %d, which its route %q does not declare (routes.go: %v)",
				r.Method, r.URL.Path, status, rt.rm.label, rt.statuses)
		}
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &fixture{t: t, fb: fb, s: s, srv: srv}
}

// request is one HTTP exchange of a test.
type request struct {
	method, path string
	header       map[string]string // Content-Type defaults to application/json when a body is sent
	body         string
	chunked      bool // send the body without a Content-Length
}

type response struct {
	status int
	header http.Header
	body   string
}

func (f *fixture) do(rq request) response {
	f.t.Helper()
	var body io.Reader
	if rq.body != "" || rq.chunked {
		body = strings.NewReader(rq.body)
		if rq.chunked {
			body = io.MultiReader(body) // hides the length
		}
	}
	req, err := http.NewRequest(rq.method, f.srv.URL+rq.path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if rq.chunked {
		req.TransferEncoding = []string{"chunked"}
	}
	if rq.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

// octet is the header of a single produce of raw bytes.
var octet = map[string]string{"Content-Type": "application/octet-stream"}

var (
	mib       = strings.Repeat("x", 1<<20)
	mibPlus1  = mib + "x"
	batch16   = `{"messages":[{"payload":"` + strings.Repeat("y", 16<<20) + `"}]}`
	bodyOver  = strings.Repeat("z", 64<<10+1)
	oneHandle = `{"receipt_handles":["h-1"]}`
)

// endToEndCase is one row of TestEndToEnd: a request on a fresh fixture (after setup) and
// what must come back. wantBody is a substring of the body, or the exact body when it
// starts with '='.
type endToEndCase struct {
	name       string
	setup      func(f *fixture)
	req        request
	wantStatus int
	wantBody   string
	wantHeader map[string]string
}

func TestEndToEnd(t *testing.T) {
	var cases []endToEndCase
	cases = append(cases, produceCases...)
	cases = append(cases, batchCases...)
	cases = append(cases, consumeCases...)
	cases = append(cases, ackCases...)
	cases = append(cases, topicCases...)
	cases = append(cases, opsCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			if c.setup != nil {
				c.setup(f)
			}
			res := f.do(c.req)
			if res.status != c.wantStatus {
				t.Fatalf("status %d, want %d; body %q", res.status, c.wantStatus, res.body)
			}
			checkBody(t, res, c.wantBody)
			for k, v := range c.wantHeader {
				if got := res.header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if res.status >= 400 && res.header.Get("Content-Type") != "application/json" {
				t.Errorf("error Content-Type %q, want application/json", res.header.Get("Content-Type"))
			}
		})
	}
}

func checkBody(t *testing.T, res response, want string) {
	t.Helper()
	if exact, ok := strings.CutPrefix(want, "="); ok {
		if res.body != exact {
			t.Errorf("body %q, want %q", res.body, exact)
		}
		return
	}
	if !strings.Contains(res.body, want) {
		t.Errorf("body %q does not contain %q", res.body, want)
	}
}

func failWith(method string, err error) func(*fixture) {
	return func(f *fixture) {
		f.fb.mu.Lock()
		defer f.fb.mu.Unlock()
		f.fb.fail[method] = err
	}
}

var produceCases = []endToEndCase{
	{name: "produce/202 octet-stream", req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "hi"}, wantStatus: 202, wantBody: "="},
	{name: "produce/202 json with charset", req: request{method: "POST", path: "/v1/topics/orders/produce?key=a&partition=2", header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: `{"a":1}`}, wantStatus: 202},
	{name: "produce/202 X-Narad-Client without Content-Type", req: request{method: "POST", path: "/v1/topics/orders/produce", header: map[string]string{"Content-Type": "", "X-Narad-Client": "go/1"}, body: "hi"}, wantStatus: 202},
	{name: "produce/202 exactly 1 MiB", req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: mib}, wantStatus: 202},
	{name: "produce/202 chunked", req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "hi", chunked: true}, wantStatus: 202},
	{name: "produce/415 no Content-Type", req: request{method: "POST", path: "/v1/topics/orders/produce", header: map[string]string{"Content-Type": ""}, body: "hi"}, wantStatus: 415, wantBody: "Content-Type"},
	{name: "produce/415 text/plain", req: request{method: "POST", path: "/v1/topics/orders/produce", header: map[string]string{"Content-Type": "text/plain"}, body: "hi"}, wantStatus: 415},
	{name: "produce/400 empty body", req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet}, wantStatus: 400, wantBody: `={"error":"empty body"}`},
	{name: "produce/400 empty chunked body", req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, chunked: true}, wantStatus: 400, wantBody: "empty body"},
	{name: "produce/413 1 MiB + 1", req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: mibPlus1}, wantStatus: 413, wantBody: "1048576"},
	{name: "produce/413 1 MiB + 1 chunked", req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: mibPlus1, chunked: true}, wantStatus: 413},
	{name: "produce/400 negative partition", req: request{method: "POST", path: "/v1/topics/orders/produce?partition=-1", header: octet, body: "x"}, wantStatus: 400, wantBody: "partition"},
	{name: "produce/400 partition not a number", req: request{method: "POST", path: "/v1/topics/orders/produce?partition=abc", header: octet, body: "x"}, wantStatus: 400},
	{name: "produce/400 partition empty", req: request{method: "POST", path: "/v1/topics/orders/produce?partition=", header: octet, body: "x"}, wantStatus: 400},
	{name: "produce/400 partition out of range", req: request{method: "POST", path: "/v1/topics/orders/produce?partition=3", header: octet, body: "x"}, wantStatus: 400, wantBody: "partition out of range"},
	{name: "produce/400 malformed escape", req: request{method: "POST", path: "/v1/topics/orders/produce?key=%zz", header: octet, body: "x"}, wantStatus: 400},
	{name: "produce/400 key over 4 KiB", req: request{method: "POST", path: "/v1/topics/orders/produce?key=" + strings.Repeat("k", 4097), header: octet, body: "x"}, wantStatus: 400, wantBody: "key"},
	{name: "produce/400 invalid topic name", req: request{method: "POST", path: "/v1/topics/bad$name/produce", header: octet, body: "x"}, wantStatus: 400, wantBody: "topic name"},
	{name: "produce/400 topic ..", req: request{method: "POST", path: "/v1/topics/%2E%2E/produce", header: octet, body: "x"}, wantStatus: 400},
	{name: "produce/400 topic of 201 characters", req: request{method: "POST", path: "/v1/topics/" + strings.Repeat("t", 201) + "/produce", header: octet, body: "x"}, wantStatus: 400},
	{name: "produce/404 unknown topic", req: request{method: "POST", path: "/v1/topics/nope/produce", header: octet, body: "x"}, wantStatus: 404, wantBody: "topic not found"},
	{name: "produce/429 broker busy", setup: failWith("Produce", node.ErrBusy), req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"}, wantStatus: 429},
	{name: "produce/500 WAL failed", setup: failWith("Produce", node.ErrWALFailed), req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"}, wantStatus: 500, wantBody: "write-ahead log"},
	{name: "produce/503 not ready", setup: failWith("Produce", node.ErrNotReady), req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"}, wantStatus: 503},
	{name: "produce/503 broker shutting down", setup: failWith("Produce", node.ErrShuttingDown), req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"}, wantStatus: 503},
	{name: "produce/503 deadline", setup: failWith("Produce", context.DeadlineExceeded), req: request{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"}, wantStatus: 503},
	{name: "produce/405 GET", req: request{method: "GET", path: "/v1/topics/orders/produce"}, wantStatus: 405, wantHeader: map[string]string{"Allow": "POST"}},
}

var batchCases = []endToEndCase{
	{name: "batch/202", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":{"a":[1,2]}},{"payload":"aGk=","payload_encoding":"base64","key":"k"},{"payload":7,"key":"/w==","key_encoding":"base64","partition":1}]}`}, wantStatus: 202, wantBody: `={"accepted":3}`},
	{name: "batch/400 unknown field", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1}],"extra":true}`}, wantStatus: 400, wantBody: "unknown field"},
	{name: "batch/400 unknown message field", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1,"headers":{}}]}`}, wantStatus: 400, wantBody: "unknown field"},
	{name: "batch/400 trailing data", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1}]} {}`}, wantStatus: 400, wantBody: "after the JSON value"},
	{name: "batch/400 syntax", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[`}, wantStatus: 400},
	{name: "batch/400 empty body", req: request{method: "POST", path: "/v1/topics/orders/produce/batch"}, wantStatus: 400, wantBody: "empty body"},
	{name: "batch/400 no messages", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[]}`}, wantStatus: 400, wantBody: "1 to 1000"},
	{name: "batch/400 1001 messages", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[` + strings.Repeat(`{"payload":1},`, 1000) + `{"payload":1}]}`}, wantStatus: 400, wantBody: "1 to 1000"},
	{name: "batch/400 message 0 without payload", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"key":"k"}]}`}, wantStatus: 400, wantBody: "message 0: payload is required"},
	{name: "batch/400 message 1 payload_encoding", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1},{"payload":"x","payload_encoding":"hex"}]}`}, wantStatus: 400, wantBody: "message 1: payload_encoding"},
	{name: "batch/400 message 2 bad base64", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1},{"payload":2},{"payload":"!!","payload_encoding":"base64"}]}`}, wantStatus: 400, wantBody: "message 2: payload: invalid base64"},
	{name: "batch/400 base64 payload not a string", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":5,"payload_encoding":"base64"}]}`}, wantStatus: 400, wantBody: "message 0: payload: a base64 payload must be a JSON string"},
	{name: "batch/400 empty base64 payload", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":"","payload_encoding":"base64"}]}`}, wantStatus: 400, wantBody: "message 0: payload must be 1 byte"},
	{name: "batch/400 negative partition", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1,"partition":-2}]}`}, wantStatus: 400, wantBody: "message 0: partition"},
	{name: "batch/400 key_encoding without key", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1,"key_encoding":"base64"}]}`}, wantStatus: 400, wantBody: "message 0: key_encoding"},
	{name: "batch/400 partition out of range", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: `{"messages":[{"payload":1},{"payload":1,"partition":9}]}`}, wantStatus: 400, wantBody: "message 1: partition out of range"},
	{name: "batch/413 over 16 MiB", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: batch16}, wantStatus: 413, wantBody: "16777216"},
	{name: "batch/413 over 16 MiB chunked", req: request{method: "POST", path: "/v1/topics/orders/produce/batch", body: batch16, chunked: true}, wantStatus: 413},
	{name: "batch/404 unknown topic", req: request{method: "POST", path: "/v1/topics/nope/produce/batch", body: `{"messages":[{"payload":1}]}`}, wantStatus: 404},
	{name: "batch/405 PUT", req: request{method: "PUT", path: "/v1/topics/orders/produce/batch"}, wantStatus: 405, wantHeader: map[string]string{"Allow": "POST"}},
}

// leaseOne takes the first lease of "full" (handle h-1, offset 1) before the request.
func leaseOne(f *fixture) {
	_, _ = f.fb.Consume(context.Background(), node.ConsumeRequest{Topic: "full", Partition: -1, Max: 1})
}

var consumeCases = []endToEndCase{
	{name: "consume/204 nothing", req: request{method: "GET", path: "/v1/topics/orders/consume"}, wantStatus: 204, wantBody: "="},
	{name: "consume/200 one message", req: request{method: "GET", path: "/v1/topics/full/consume?wait=1s"}, wantStatus: 200,
		wantBody: `={"topic":"full","partition":0,"offset":1,"key":"k1","payload":"hello","timestamp":1700000000,"receipt_handle":"h-1"}`},
	{name: "consume/200 max", req: request{method: "GET", path: "/v1/topics/full/consume?max=5&partition=0"}, wantStatus: 200,
		wantBody: `={"messages":[{"topic":"full","partition":0,"offset":1,"key":"k1","payload":"hello","timestamp":1700000000,"receipt_handle":"h-1"},` +
			`{"topic":"full","partition":0,"offset":2,"key":"/w==","key_encoding":"base64","payload":"/wD+","payload_encoding":"base64","timestamp":1700000000,"receipt_handle":"h-2"}]}`},
	{name: "consume/204 max with nothing", req: request{method: "GET", path: "/v1/topics/orders/consume?max=3"}, wantStatus: 204},
	{name: "consume/400 max 0", req: request{method: "GET", path: "/v1/topics/full/consume?max=0"}, wantStatus: 400, wantBody: "max"},
	{name: "consume/400 max 101", req: request{method: "GET", path: "/v1/topics/full/consume?max=101"}, wantStatus: 400},
	{name: "consume/400 wait malformed", req: request{method: "GET", path: "/v1/topics/full/consume?wait=soon"}, wantStatus: 400, wantBody: "wait"},
	{name: "consume/400 wait negative", req: request{method: "GET", path: "/v1/topics/full/consume?wait=-1s"}, wantStatus: 400},
	{name: "consume/400 partition", req: request{method: "GET", path: "/v1/topics/full/consume?partition=x"}, wantStatus: 400},
	{name: "consume/400 partition out of range", req: request{method: "GET", path: "/v1/topics/full/consume?partition=1"}, wantStatus: 400},
	{name: "consume/400 offset without partition", req: request{method: "GET", path: "/v1/topics/full/consume?offset=1"}, wantStatus: 400, wantBody: "offset requires partition"},
	{name: "consume/400 malformed query", req: request{method: "GET", path: "/v1/topics/full/consume?max=%zz"}, wantStatus: 400},
	{name: "consume/200 replay", req: request{method: "GET", path: "/v1/topics/full/consume?partition=0&offset=1"}, wantStatus: 200,
		wantBody: `={"topic":"full","partition":0,"offset":1,"key":"k1","payload":"hello","timestamp":1700000000}`},
	{name: "consume/204 replay past the end", req: request{method: "GET", path: "/v1/topics/full/consume?partition=0&offset=3"}, wantStatus: 204},
	{name: "consume/410 replay removed", req: request{method: "GET", path: "/v1/topics/full/consume?partition=0&offset=0"}, wantStatus: 410, wantBody: "offset removed"},
	{name: "consume/404 unknown topic", req: request{method: "GET", path: "/v1/topics/nope/consume"}, wantStatus: 404},
	{name: "consume/500 corrupt", setup: failWith("Consume", node.ErrCorrupt), req: request{method: "GET", path: "/v1/topics/full/consume"}, wantStatus: 500, wantBody: "checksum"},
	{name: "consume/405 POST", req: request{method: "POST", path: "/v1/topics/full/consume"}, wantStatus: 405, wantHeader: map[string]string{"Allow": "GET"}},
}

var ackCases = []endToEndCase{
	{name: "ack/204", setup: leaseOne, req: request{method: "POST", path: "/v1/topics/full/ack?receipt_handle=h-1"}, wantStatus: 204, wantBody: "="},
	{name: "ack/204 extend", setup: leaseOne, req: request{method: "POST", path: "/v1/topics/full/ack?receipt_handle=h-1&extend=true"}, wantStatus: 204},
	{name: "ack/204 release", setup: leaseOne, req: request{method: "POST", path: "/v1/topics/full/ack?receipt_handle=h-1&extend=0"}, wantStatus: 204},
	{name: "ack/410 bad handle", req: request{method: "POST", path: "/v1/topics/full/ack?receipt_handle=forged"}, wantStatus: 410, wantBody: "malformed receipt handle"},
	{name: "ack/410 handle of another topic", setup: leaseOne, req: request{method: "POST", path: "/v1/topics/orders/ack?receipt_handle=h-1"}, wantStatus: 410, wantBody: "lease no longer valid"},
	{name: "ack/400 no handle", req: request{method: "POST", path: "/v1/topics/full/ack"}, wantStatus: 400, wantBody: "receipt_handle"},
	{name: "ack/400 empty handle", req: request{method: "POST", path: "/v1/topics/full/ack?receipt_handle="}, wantStatus: 400},
	{name: "ack/400 extend=yes", req: request{method: "POST", path: "/v1/topics/full/ack?receipt_handle=h-1&extend=yes"}, wantStatus: 400, wantBody: "extend"},
	{name: "ack/404 unknown topic", req: request{method: "POST", path: "/v1/topics/nope/ack?receipt_handle=h-1"}, wantStatus: 404},
	{name: "ack/200 batch", setup: leaseOne, req: request{method: "POST", path: "/v1/topics/full/ack", body: `{"receipt_handles":["h-1","h-1","zz"]}`}, wantStatus: 200,
		wantBody: `={"results":[{"status":204},{"status":410,"error":"lease no longer valid"},{"status":410,"error":"malformed receipt handle"}]}`},
	{name: "ack/400 batch unknown field", req: request{method: "POST", path: "/v1/topics/full/ack", body: `{"receipt_handles":["h-1"],"x":1}`}, wantStatus: 400, wantBody: "unknown field"},
	{name: "ack/400 batch empty", req: request{method: "POST", path: "/v1/topics/full/ack", body: `{"receipt_handles":[]}`}, wantStatus: 400, wantBody: "1 to 100"},
	{name: "ack/400 batch of 101", req: request{method: "POST", path: "/v1/topics/full/ack", body: `{"receipt_handles":[` + strings.Repeat(`"h",`, 100) + `"h"]}`}, wantStatus: 400},
	{name: "ack/503 batch broker not ready", setup: failWith("Ack", node.ErrNotReady), req: request{method: "POST", path: "/v1/topics/full/ack", body: oneHandle}, wantStatus: 503},
	{name: "ack/405 GET", req: request{method: "GET", path: "/v1/topics/full/ack"}, wantStatus: 405},
}

var topicCases = []endToEndCase{
	{name: "topics/201 create", req: request{method: "POST", path: "/v1/topics", body: `{"name":"new.topic_1-x","partitions":4,"retention_ms":0}`}, wantStatus: 201,
		wantBody:   `={"name":"new.topic_1-x","id":3,"partitions":4,"retention_ms":0,"visibility_timeout_ms":30000,"max_in_flight_per_partition":1024,"created_at":1700000000}`,
		wantHeader: map[string]string{"Location": "/v1/topics/new.topic_1-x"}},
	{name: "topics/409 exists", req: request{method: "POST", path: "/v1/topics", body: `{"name":"orders"}`}, wantStatus: 409},
	{name: "topics/400 invalid name", req: request{method: "POST", path: "/v1/topics", body: `{"name":"a/b"}`}, wantStatus: 400, wantBody: "topic name"},
	{name: "topics/400 name .", req: request{method: "POST", path: "/v1/topics", body: `{"name":"."}`}, wantStatus: 400},
	{name: "topics/400 unknown field", req: request{method: "POST", path: "/v1/topics", body: `{"name":"x","replicas":3}`}, wantStatus: 400, wantBody: "unknown field"},
	{name: "topics/400 negative partitions", req: request{method: "POST", path: "/v1/topics", body: `{"name":"x","partitions":-1}`}, wantStatus: 400},
	{name: "topics/400 broker invalid", req: request{method: "POST", path: "/v1/topics", body: `{"name":"x","partitions":0}`}, wantStatus: 400, wantBody: "invalid request: partitions must be at least 1"},
	{name: "topics/400 empty body", req: request{method: "POST", path: "/v1/topics"}, wantStatus: 400},
	{name: "topics/413 body too large", req: request{method: "POST", path: "/v1/topics", body: bodyOver}, wantStatus: 413},
	{name: "topics/500 metastore", setup: failWith("CreateTopic", node.ErrMetastoreFailed), req: request{method: "POST", path: "/v1/topics", body: `{"name":"x"}`}, wantStatus: 500},
	{name: "topics/200 list", req: request{method: "GET", path: "/v1/topics"}, wantStatus: 200, wantBody: `"next_page_token":""}`},
	{name: "members/200", req: request{method: "GET", path: "/v1/cluster/members"}, wantStatus: 200,
		wantBody: `={"members":[{"id":1,"addr":"127.0.0.1:7942","status":"alive","leader":true,"voter":true,"owned_partitions":3,"draining":false,"moves_in":0,"moves_out":0},{"id":2,"addr":"127.0.0.1:7943","status":"dead","leader":false,"voter":false,"owned_partitions":0,"draining":false,"moves_in":0,"moves_out":0}]}`},
	{name: "members/503 not ready", setup: failWith("Members", node.ErrNotReady), req: request{method: "GET", path: "/v1/cluster/members"}, wantStatus: 503},
	{name: "members/405 POST", req: request{method: "POST", path: "/v1/cluster/members"}, wantStatus: 405},
	{name: "forget/200 dry run", req: request{method: "POST", path: "/v1/cluster/members/2/forget?dry_run=true"}, wantStatus: 200,
		wantBody: `={"member":2,"dry_run":true,"partitions":[{"topic":"orders","partition":1,"from":2,"to":1,"epoch":1,"first_offset":1099511627776,` +
			`"high_watermark":12,"oldest_offset":4,"records_lost":8},{"topic":"orders","partition":3,"from":2,"to":1,"epoch":1,` +
			`"first_offset":1099511627776,"high_watermark":null,"oldest_offset":null,"records_lost":null}],"records_lost":8,"partitions_without_marks":1}`},
	{name: "forget/200", req: request{method: "POST", path: "/v1/cluster/members/2/forget"}, wantStatus: 200, wantBody: `"dry_run":false`},
	{name: "forget/409 alive", req: request{method: "POST", path: "/v1/cluster/members/1/forget"}, wantStatus: 409, wantBody: "alive"},
	{name: "forget/404 unknown", req: request{method: "POST", path: "/v1/cluster/members/7/forget"}, wantStatus: 404},
	{name: "forget/400 id", req: request{method: "POST", path: "/v1/cluster/members/x/forget"}, wantStatus: 400, wantBody: "member id"},
	{name: "forget/400 id 0", req: request{method: "POST", path: "/v1/cluster/members/0/forget"}, wantStatus: 400},
	{name: "forget/400 dry_run", req: request{method: "POST", path: "/v1/cluster/members/2/forget?dry_run=maybe"}, wantStatus: 400, wantBody: "dry_run"},
	{name: "decommission/202", req: request{method: "POST", path: "/v1/cluster/members/2/decommission"}, wantStatus: 202,
		wantBody: `{"member":2,"dry_run":false,"partitions":0,"state":"draining"}`},
	{name: "decommission/200 dry run allowed", req: request{method: "POST", path: "/v1/cluster/members/2/decommission?dry_run=true"},
		wantStatus: 200, wantBody: `"allowed":true`},
	{name: "decommission/200 dry run refused", req: request{method: "POST", path: "/v1/cluster/members/3/decommission?dry_run=true"},
		wantStatus: 200, wantBody: `"allowed":false,"refusal":"partitions: member 3 owns 4"`},
	{name: "decommission/409 guard", req: request{method: "POST", path: "/v1/cluster/members/1/decommission"}, wantStatus: 409, wantBody: "quorum"},
	{name: "decommission/404 unknown", req: request{method: "POST", path: "/v1/cluster/members/7/decommission"}, wantStatus: 404},
	{name: "decommission/400 id", req: request{method: "POST", path: "/v1/cluster/members/x/decommission"}, wantStatus: 400, wantBody: "member id"},
	{name: "decommission/400 dry_run", req: request{method: "POST", path: "/v1/cluster/members/2/decommission?dry_run=2x"}, wantStatus: 400, wantBody: "dry_run"},
	{name: "decommission/204 cancel", req: request{method: "DELETE", path: "/v1/cluster/members/2/decommission"}, wantStatus: 204},
	{name: "decommission/409 cancel not draining", req: request{method: "DELETE", path: "/v1/cluster/members/1/decommission"}, wantStatus: 409, wantBody: "not draining"},
	{name: "decommission/404 cancel unknown", req: request{method: "DELETE", path: "/v1/cluster/members/7/decommission"}, wantStatus: 404},
	{name: "decommission/405 GET", req: request{method: "GET", path: "/v1/cluster/members/2/decommission"}, wantStatus: 405},
	{name: "forget/405 GET", req: request{method: "GET", path: "/v1/cluster/members/2/forget"}, wantStatus: 405},
	{name: "forget/404 other sub", req: request{method: "POST", path: "/v1/cluster/members/2/vanish"}, wantStatus: 404},
	{name: "moves/200 list", req: request{method: "GET", path: "/v1/cluster/moves"}, wantStatus: 200,
		wantBody: `={"moves":[{"topic":"orders","partition":1,"from":1,"to":2,"state":"frozen"}]}`},
	{name: "moves/202 start", req: request{method: "POST", path: "/v1/cluster/moves", body: `{"topic":"orders","partition":0,"to":2}`},
		wantStatus: 202, wantBody: `"state":"copying"`},
	{name: "moves/202 start names the source", req: request{method: "POST", path: "/v1/cluster/moves", body: `{"topic":"orders","partition":1,"to":2}`},
		wantStatus: 202, wantBody: `"from":1,"to":2`},
	{name: "moves/409 start refused", req: request{method: "POST", path: "/v1/cluster/moves", body: `{"topic":"orders","partition":0,"to":9}`},
		wantStatus: 409, wantBody: "destination"},
	{name: "moves/400 start no partition", req: request{method: "POST", path: "/v1/cluster/moves", body: `{"topic":"orders","to":2}`},
		wantStatus: 400, wantBody: "partition"},
	{name: "moves/400 start unknown field", req: request{method: "POST", path: "/v1/cluster/moves", body: `{"topic":"orders","partition":0,"to":2,"x":1}`},
		wantStatus: 400},
	{name: "moves/202 abort", req: request{method: "POST", path: "/v1/cluster/moves/orders/1/abort"}, wantStatus: 202},
	{name: "moves/404 abort no move", req: request{method: "POST", path: "/v1/cluster/moves/orders/0/abort"}, wantStatus: 404},
	{name: "moves/400 abort bad partition", req: request{method: "POST", path: "/v1/cluster/moves/orders/x/abort"}, wantStatus: 400},
	{name: "moves/405 abort GET", req: request{method: "GET", path: "/v1/cluster/moves/orders/1/abort"}, wantStatus: 405},
	{name: "moves/202 rebalance", req: request{method: "POST", path: "/v1/cluster/rebalance"}, wantStatus: 202, wantBody: `"rebalancing"`},
	{name: "moves/405 rebalance GET", req: request{method: "GET", path: "/v1/cluster/rebalance"}, wantStatus: 405},
	{name: "moves/404 other sub", req: request{method: "POST", path: "/v1/cluster/moves/orders/1/go"}, wantStatus: 404},
	{name: "topics/400 list limit 0", req: request{method: "GET", path: "/v1/topics?limit=0"}, wantStatus: 400, wantBody: "limit"},
	{name: "topics/400 list bad page token", req: request{method: "GET", path: "/v1/topics?page_token=***"}, wantStatus: 400, wantBody: "page_token"},
	{name: "topics/200 get", req: request{method: "GET", path: "/v1/topics/full"}, wantStatus: 200,
		wantBody: `"partition_stats":[{"index":0,"high_watermark":3,"oldest_offset":1,"next_offset":3,"owner_node":"n1","size_bytes":30,"in_flight":0}]}`},
	{name: "topics/404 get", req: request{method: "GET", path: "/v1/topics/nope"}, wantStatus: 404},
	{name: "topics/400 get invalid name", req: request{method: "GET", path: "/v1/topics/a*b"}, wantStatus: 400},
	{name: "topics/200 patch", req: request{method: "PATCH", path: "/v1/topics/orders", body: `{"partitions":5,"retention_ms":1000}`}, wantStatus: 200, wantBody: `"partitions":5,"retention_ms":1000`},
	{name: "topics/400 patch shrink", req: request{method: "PATCH", path: "/v1/topics/orders", body: `{"partitions":1}`}, wantStatus: 400, wantBody: "grow"},
	{name: "topics/400 patch name", req: request{method: "PATCH", path: "/v1/topics/orders", body: `{"name":"x"}`}, wantStatus: 400, wantBody: "unknown field"},
	{name: "topics/404 patch", req: request{method: "PATCH", path: "/v1/topics/nope", body: `{}`}, wantStatus: 404},
	{name: "topics/204 delete", req: request{method: "DELETE", path: "/v1/topics/orders"}, wantStatus: 204, wantBody: "="},
	{name: "topics/404 delete", req: request{method: "DELETE", path: "/v1/topics/nope"}, wantStatus: 404},
	{name: "topics/405 on collection", req: request{method: "DELETE", path: "/v1/topics"}, wantStatus: 405, wantHeader: map[string]string{"Allow": "GET, POST"}},
	{name: "topics/405 on topic", req: request{method: "POST", path: "/v1/topics/orders"}, wantStatus: 405, wantHeader: map[string]string{"Allow": "GET, PATCH, DELETE"}},
}

var opsCases = []endToEndCase{
	{name: "ops/healthz", req: request{method: "GET", path: "/healthz"}, wantStatus: 200, wantBody: `={"status":"ok"}`},
	{name: "ops/readyz", req: request{method: "GET", path: "/readyz"}, wantStatus: 200, wantBody: `={"status":"ok"}`},
	{name: "ops/readyz not ready", setup: func(f *fixture) { f.fb.notReady = errors.New("node not ready: recovering the metastore") }, // before any request
		req: request{method: "GET", path: "/readyz"}, wantStatus: 503, wantBody: `={"error":"node not ready: recovering the metastore"}`},
	{name: "ops/metrics", req: request{method: "GET", path: "/metrics"}, wantStatus: 200, wantBody: "narad_http_request_duration_seconds"},
	{name: "ops/openapi.json", req: request{method: "GET", path: "/v1/openapi.json"}, wantStatus: 200, wantBody: `"openapi":"3.1.0"`,
		wantHeader: map[string]string{"Content-Type": "application/json"}},
	{name: "ops/openapi.yaml", req: request{method: "GET", path: "/v1/openapi.yaml"}, wantStatus: 200, wantBody: "openapi: 3.1.0",
		wantHeader: map[string]string{"Content-Type": "application/yaml"}},
	{name: "ops/405 openapi.json", req: request{method: "POST", path: "/v1/openapi.json"}, wantStatus: 405, wantHeader: map[string]string{"Allow": "GET"}},
	{name: "ops/405 healthz", req: request{method: "POST", path: "/healthz"}, wantStatus: 405, wantHeader: map[string]string{"Allow": "GET"}},
	{name: "ops/404 unknown path", req: request{method: "GET", path: "/nope"}, wantStatus: 404, wantBody: `={"error":"not found"}`},
	{name: "ops/404 unknown sub-resource", req: request{method: "GET", path: "/v1/topics/orders/nope"}, wantStatus: 404},
	{name: "ops/404 trailing slash", req: request{method: "GET", path: "/v1/topics/orders/"}, wantStatus: 404},
	{name: "ops/500 unknown broker error", setup: failWith("GetTopic", errors.New("boom")), req: request{method: "GET", path: "/v1/topics/orders"}, wantStatus: 500, wantBody: `={"error":"boom"}`},
}

func TestWaitClamped(t *testing.T) {
	f := newFixture(t, Options{})
	res := f.do(request{method: "GET", path: "/v1/topics/orders/consume?wait=1m"})
	if res.status != 204 || res.header.Get("X-Narad-Wait-Clamped") != "true" {
		t.Fatalf("status %d, clamp header %q", res.status, res.header.Get("X-Narad-Wait-Clamped"))
	}
	res = f.do(request{method: "GET", path: "/v1/topics/orders/consume?wait=250ms&partition=2"})
	if res.status != 204 || res.header.Get("X-Narad-Wait-Clamped") != "" {
		t.Fatalf("unclamped: status %d, clamp header %q", res.status, res.header.Get("X-Narad-Wait-Clamped"))
	}
	f.fb.mu.Lock()
	defer f.fb.mu.Unlock()
	want := []node.ConsumeRequest{
		{Topic: "orders", Partition: -1, Max: 1, WaitNs: int64(10 * time.Second)},
		{Topic: "orders", Partition: 2, Max: 1, WaitNs: int64(250 * time.Millisecond)},
	}
	if len(f.fb.consumes) != 2 || f.fb.consumes[0] != want[0] || f.fb.consumes[1] != want[1] {
		t.Fatalf("broker got %+v, want %+v", f.fb.consumes, want)
	}
}

func TestShutdown(t *testing.T) {
	f := newFixture(t, Options{})
	f.s.BeginShutdown()
	for _, rq := range []request{
		{method: "POST", path: "/v1/topics/orders/produce", header: octet, body: "x"},
		{method: "GET", path: "/v1/topics/orders/consume"},
		{method: "GET", path: "/v1/topics"},
		{method: "DELETE", path: "/v1/topics/orders"},
		{method: "GET", path: "/v1/cluster/members"},
		{method: "GET", path: "/healthz"},
		{method: "GET", path: "/readyz"},
	} {
		res := f.do(rq)
		if res.status != 503 || res.body != `{"error":"node shutting down"}` {
			t.Errorf("%s %s: %d %q, want 503 node shutting down", rq.method, rq.path, res.status, res.body)
		}
	}
	if res := f.do(request{method: "GET", path: "/metrics"}); res.status != 200 {
		t.Errorf("/metrics during shutdown: %d", res.status)
	}
	if calls := f.fb.callLog(); len(calls) != 0 {
		t.Errorf("the broker was called during shutdown: %v", calls)
	}
}
