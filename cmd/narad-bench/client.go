package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	maxMessage    = 1 << 20  // API: a message is 1 byte to 1 MiB
	maxBatchBody  = 16 << 20 // API: a batch body is at most 16 MiB
	maxBatchMsgs  = 1000     // API: 1 to 1,000 messages per produce batch
	maxConsumeMax = 100      // API: consume max and batch ack are 1..100
	consumeWait   = "1s"
	errBodyLimit  = 1024
	errBackoff    = 10 * time.Millisecond
)

// newClient returns a keep-alive client sized for workers concurrent requests that dials
// loopback peers only. It has no overall timeout: every request carries the run's context.
func newClient(workers int) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if ta, ok := c.RemoteAddr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
				_ = c.Close() // refused before use
				return nil, fmt.Errorf("refusing non-loopback peer %v", c.RemoteAddr())
			}
			return c, nil
		},
		MaxIdleConns:          workers,
		MaxIdleConnsPerHost:   workers,
		MaxConnsPerHost:       workers,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		DisableKeepAlives:     false,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 0,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
	}
	return &http.Client{Transport: tr}
}

// target holds the URLs of one topic on one node.
type target struct {
	addr     string
	topic    string
	topics   string // POST /v1/topics
	produce  string
	batch    string
	consume  string
	ack      string
	healthz  string
	ackURL   *url.URL
	topicEsc string
	pin      string // "partition=P" when pinned to one partition (owners.go), else ""
}

func newTarget(addr, topic string) *target {
	base := "http://" + addr
	t := &target{addr: addr, topic: topic, topicEsc: url.PathEscape(topic)}
	tp := base + "/v1/topics/" + t.topicEsc
	t.topics = base + "/v1/topics"
	t.produce = tp + "/produce"
	t.batch = tp + "/produce/batch"
	t.consume = tp + "/consume"
	t.ack = tp + "/ack"
	t.healthz = base + "/healthz"
	t.ackURL, _ = url.Parse(t.ack)
	return t
}

// readerBody is a request body over a shared, never-modified payload: one small allocation
// per request and no copy.
type readerBody struct{ bytes.Reader }

func (*readerBody) Close() error { return nil }

func newReaderBody(p []byte) *readerBody {
	rb := &readerBody{}
	rb.Reset(p)
	return rb
}

// trackedBody is a body over a buffer the worker reuses: the transport may still be writing
// it after Do returns (when the server answered before reading it all), so the worker waits
// for Close before touching the buffer again.
type trackedBody struct {
	bytes.Reader
	once sync.Once
	done chan struct{}
}

func (t *trackedBody) Close() error {
	t.once.Do(func() { close(t.done) })
	return nil
}

// bench is one run's shared state.
type bench struct {
	client *http.Client
	spec   runSpec
	cancel context.CancelCauseFunc
	abort  atomic.Bool // set once a route is found missing
}

// isAPIError reports whether body looks like the API's `{"error": …}`.
func isAPIError(body []byte) bool {
	body = bytes.TrimSpace(body)
	return len(body) > 0 && body[0] == '{' && bytes.Contains(body, []byte(`"error"`))
}

// routeMissing tells a route the server does not serve from an API answer: the API never
// answers 405 on its routes, and its 404s (an unknown topic) are JSON errors, so a 404
// is a missing route when its body is not a JSON error (a mux's "404 page not found") or
// says so (cmd/narad answers {"error":"no route for GET /v1/…"}).
func routeMissing(status int, body []byte) bool {
	switch status {
	case http.StatusMethodNotAllowed:
		return true
	case http.StatusNotFound:
		return !isAPIError(body) || bytes.Contains(bytes.ToLower(body), []byte("no route"))
	}
	return false
}

// unexpected counts a response with an unexpected status and detects a route the server
// does not serve (see routeMissing), which stops the run.
func (b *bench) unexpected(ws *workerStats, resp *http.Response, method, route string) {
	key := strconv.Itoa(resp.StatusCode)
	var body []byte
	if _, seen := ws.first[key]; !seen || resp.StatusCode == 404 || resp.StatusCode == 405 {
		ws.buf.Reset()
		_, _ = ws.buf.ReadFrom(io.LimitReader(resp.Body, errBodyLimit)) // what arrived is reported
		body = ws.buf.Bytes()
	}
	drain(resp)
	ws.fail(key, string(body))
	if routeMissing(resp.StatusCode, body) {
		if ws.missing == "" {
			ws.missing = fmt.Sprintf("%s %s → %d", method, route, resp.StatusCode)
		}
		if b.abort.CompareAndSwap(false, true) {
			b.cancel(errors.New("route not served: " + ws.missing))
		}
	}
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body) // drained so the connection is reused
	_ = resp.Body.Close()
}

// transportErr counts a request that got no response, then pauses briefly (bounded by ctx)
// so a dead server does not turn the run into a busy loop.
func (ws *workerStats) transportErr(ctx context.Context, err error) {
	ws.fail("transport", err.Error())
	ws.wait(ctx, errBackoff)
}

func (ws *workerStats) wait(ctx context.Context, d time.Duration) {
	if ws.timer == nil {
		ws.timer = time.NewTimer(d)
	} else {
		ws.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
	case <-ws.timer.C:
	}
}

// template builds a request once per worker; each iteration sends a shallow copy.
func template(ctx context.Context, method, u, contentType string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		panic(err) // URLs are built from validated parts
	}
	req.Header.Set("User-Agent", "narad-bench")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	setCredentials(req)
	return req
}

// credentials are the HTTP Basic user and password every request carries: NARAD_USER
// (default admin) and NARAD_PASSWORD, read once at start; none without a password (a
// node run with -dev, or a fake).
var credentials struct{ user, password string }

func readCredentials(getenv func(string) string) {
	credentials.user, credentials.password = getenv("NARAD_USER"), getenv("NARAD_PASSWORD")
	if credentials.user == "" {
		credentials.user = "admin"
	}
}

func setCredentials(req *http.Request) {
	if credentials.password != "" {
		req.SetBasicAuth(credentials.user, credentials.password)
	}
}

// produceLoop posts payload to u until ctx ends. With batch, each 202's {"accepted":n}
// counts n messages; otherwise each 202 counts one.
func (b *bench) produceLoop(ctx context.Context, ws *workerStats, u, route, contentType string, payload []byte, batch bool) {
	tmpl := template(ctx, http.MethodPost, u, contentType)
	tmpl.ContentLength = int64(len(payload))
	tmpl.GetBody = func() (io.ReadCloser, error) { return newReaderBody(payload), nil }
	for ctx.Err() == nil {
		req := new(http.Request)
		*req = *tmpl
		req.Body = newReaderBody(payload)
		start := time.Now()
		resp, err := b.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ws.transportErr(ctx, err)
			continue
		}
		ws.reqs++
		if resp.StatusCode != http.StatusAccepted {
			b.unexpected(ws, resp, http.MethodPost, route)
			ws.hist.Record(time.Since(start))
			continue
		}
		n := uint64(1)
		if batch {
			ws.buf.Reset()
			_, err = ws.buf.ReadFrom(resp.Body)
			_ = resp.Body.Close() // read whole: a close error changes nothing
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				ws.transportErr(ctx, err)
				continue
			}
			a, ok := parseAccepted(ws.buf.Bytes())
			if !ok {
				ws.fail("bad 202 body", oneLine(ws.buf.String(), errBodyLimit))
				a = 0
			}
			n = uint64(a)
		} else {
			drain(resp)
		}
		ws.hist.Record(time.Since(start))
		ws.msgs += n
	}
}

// parseAccepted reads n from {"accepted":n} without allocating, falling back to
// encoding/json for any other spacing or field order.
func parseAccepted(b []byte) (int, bool) {
	const pfx = `{"accepted":`
	if bytes.HasPrefix(b, []byte(pfx)) {
		rest := bytes.TrimSpace(b[len(pfx):])
		if i := bytes.IndexByte(rest, '}'); i > 0 {
			if n, err := strconv.Atoi(string(bytes.TrimSpace(rest[:i]))); err == nil {
				return n, true
			}
		}
	}
	var v struct {
		Accepted *int `json:"accepted"`
	}
	if json.Unmarshal(b, &v) != nil || v.Accepted == nil {
		return 0, false
	}
	return *v.Accepted, true
}

type consumedMessage struct {
	ReceiptHandle string `json:"receipt_handle"`
}

type consumedBatch struct {
	Messages []consumedMessage `json:"messages"`
}

type ackResults struct {
	Results []struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	} `json:"results"`
}

// consumeAckLoop leases (max=batch when batch > 1, wait=1s) and acknowledges every lease,
// counting acknowledged messages. Latency is recorded for consumes that returned messages
// and for acks; empty long polls (204) are counted apart, their duration is the wait.
func (b *bench) consumeAckLoop(ctx context.Context, ws *workerStats, t *target, batch int) {
	q := "wait=" + consumeWait
	if batch > 1 {
		q += "&max=" + strconv.Itoa(batch)
	}
	consumeRoute := "/v1/topics/" + t.topicEsc + "/consume"
	ackRoute := "/v1/topics/" + t.topicEsc + "/ack"
	ctmpl := template(ctx, http.MethodGet, t.consume+"?"+q, "")
	atmpl := template(ctx, http.MethodPost, t.ack, "")
	btmpl := template(ctx, http.MethodPost, t.ack, "application/json")
	var single consumedMessage
	var many consumedBatch
	handles := make([]string, 0, max(batch, 1))
	for ctx.Err() == nil {
		body, ok, done := b.poll(ctx, ws, ctmpl, consumeRoute)
		if done {
			return
		}
		if !ok {
			continue
		}
		handles = handles[:0]
		var err error
		if batch > 1 {
			// Unmarshal reuses the backing array without zeroing it.
			clear(many.Messages[:cap(many.Messages)])
			many.Messages = many.Messages[:0]
			err = json.Unmarshal(body, &many)
			for _, m := range many.Messages {
				handles = append(handles, m.ReceiptHandle)
			}
		} else {
			single.ReceiptHandle = ""
			err = json.Unmarshal(body, &single)
			handles = append(handles, single.ReceiptHandle)
		}
		if err != nil {
			ws.fail("bad 200 body", oneLine(string(body), errBodyLimit))
			continue
		}
		if batch > 1 {
			if !b.ackBatch(ctx, ws, btmpl, ackRoute, handles) {
				return
			}
			continue
		}
		for _, h := range handles {
			if h == "" {
				ws.fail("no receipt_handle", oneLine(string(body), errBodyLimit))
				continue
			}
			if !b.ackOne(ctx, ws, t, atmpl, ackRoute, h) {
				return
			}
		}
	}
}

// poll sends one consume. ok: body is a 200's (in ws.buf, valid until the next request);
// not ok: an empty poll or a failure, both counted; done: the run ended. The latency of a
// 200 or a failure is recorded, not that of an empty long poll.
func (b *bench) poll(ctx context.Context, ws *workerStats, tmpl *http.Request, route string) (body []byte, ok, done bool) {
	req := new(http.Request)
	*req = *tmpl
	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, true
		}
		ws.transportErr(ctx, err)
		return nil, false, false
	}
	ws.reqs++
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent:
		drain(resp)
		ws.empty++
		return nil, false, false
	default:
		b.unexpected(ws, resp, http.MethodGet, route)
		ws.hist.Record(time.Since(start))
		return nil, false, false
	}
	ws.buf.Reset()
	_, err = ws.buf.ReadFrom(resp.Body)
	_ = resp.Body.Close() // read whole: a close error changes nothing
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, true
		}
		ws.transportErr(ctx, err)
		return nil, false, false
	}
	ws.hist.Record(time.Since(start))
	return ws.buf.Bytes(), true, false
}

// ackBatch settles handles with one batch ack, counting each settled (204) lease in ws.msgs;
// false when the run ended. An empty list sends nothing.
func (b *bench) ackBatch(ctx context.Context, ws *workerStats, tmpl *http.Request, route string, handles []string) bool {
	if len(handles) == 0 {
		return true
	}
	// The previous batch ack's body may still be in the transport's hands.
	if ws.prevBody != nil {
		select {
		case <-ws.prevBody.done:
		case <-ctx.Done():
			return false
		}
	}
	ws.ackBuf = appendAckBody(ws.ackBuf[:0], handles)
	body := &trackedBody{done: make(chan struct{})}
	body.Reset(ws.ackBuf)
	ws.prevBody = body
	req := new(http.Request)
	*req = *tmpl
	req.Body = body
	req.ContentLength = int64(len(ws.ackBuf))
	start := time.Now()
	resp, more := b.send(ctx, ws, req)
	if resp == nil {
		return more
	}
	if resp.StatusCode != http.StatusOK {
		b.unexpected(ws, resp, http.MethodPost, route)
		ws.hist.Record(time.Since(start))
		return true
	}
	ws.buf.Reset()
	_, err := ws.buf.ReadFrom(resp.Body)
	_ = resp.Body.Close() // read whole: a close error changes nothing
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		ws.transportErr(ctx, err)
		return true
	}
	ws.hist.Record(time.Since(start))
	res := &ws.ackResults
	clear(res.Results[:cap(res.Results)])
	res.Results = res.Results[:0]
	if err := json.Unmarshal(ws.buf.Bytes(), res); err != nil {
		ws.fail("bad ack body", oneLine(ws.buf.String(), errBodyLimit))
		return true
	}
	for _, r := range res.Results {
		if r.Status == http.StatusNoContent {
			ws.msgs++
		} else {
			ws.fail("ack item "+strconv.Itoa(r.Status), r.Error)
		}
	}
	return true
}

// ackOne settles one lease; false when the run ended.
func (b *bench) ackOne(ctx context.Context, ws *workerStats, t *target, tmpl *http.Request, route, handle string) bool {
	u := *t.ackURL
	u.RawQuery = "receipt_handle=" + url.QueryEscape(handle)
	req := new(http.Request)
	*req = *tmpl
	req.URL = &u
	start := time.Now()
	resp, more := b.send(ctx, ws, req)
	if resp == nil {
		return more
	}
	if resp.StatusCode != http.StatusNoContent {
		b.unexpected(ws, resp, http.MethodPost, route)
	} else {
		drain(resp)
		ws.msgs++
	}
	ws.hist.Record(time.Since(start))
	return true
}

// appendAckBody appends {"receipt_handles":[…]}.
func appendAckBody(b []byte, handles []string) []byte {
	b = append(b, `{"receipt_handles":[`...)
	for i, h := range handles {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, h)
	}
	return append(b, "]}"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// makePayload returns size printable bytes.
func makePayload(size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

// batchBody builds a produce/batch body of n copies of payload, base64-encoded.
func batchBody(n int, payload []byte) ([]byte, error) {
	item := `{"payload":"` + base64.StdEncoding.EncodeToString(payload) + `","payload_encoding":"base64"}`
	size := len(`{"messages":[]}`) + n*(len(item)+1)
	if size > maxBatchBody {
		return nil, fmt.Errorf("a batch of %d messages of %d bytes is a %d-byte body, over the API's 16 MiB", n, len(payload), size)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"messages":[`...)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	return append(b, "]}"...), nil
}

// errRouteMissing is returned by setup steps for an answer routeMissing recognizes.
type errRouteMissing struct {
	route  string // "POST /v1/topics"
	status int
	body   string
}

func (e *errRouteMissing) Error() string {
	return fmt.Sprintf("route not served: %s → %d %s", e.route, e.status, oneLine(e.body, 200))
}

// setupPost sends one setup request (bounded by ctx) and returns its status and body.
func setupPost(ctx context.Context, client *http.Client, u, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "narad-bench")
	setCredentials(req)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, rb, err
}

// createTopic creates the topic; an existing topic (409) is fine.
func createTopic(ctx context.Context, client *http.Client, t *target, partitions int) (string, error) {
	body, _ := json.Marshal(struct {
		Name       string `json:"name"`
		Partitions int    `json:"partitions"`
	}{t.topic, partitions})
	status, rb, err := setupPost(ctx, client, t.topics, "application/json", body)
	switch {
	case err != nil:
		return "", fmt.Errorf("create topic %q: %w", t.topic, err)
	case status == http.StatusCreated:
		return "created", nil
	case status == http.StatusConflict:
		return "already exists", nil
	case routeMissing(status, rb):
		return "", &errRouteMissing{"POST /v1/topics", status, string(rb)}
	default:
		return "", fmt.Errorf("create topic %q: status %d: %s", t.topic, status, oneLine(string(rb), 300))
	}
}

// prefill produces n messages of size bytes with batch produce on conc connections, spread
// round-robin over targets, retrying 429 and 503 (bounded by ctx). It returns how many the
// nodes accepted.
func prefill(ctx context.Context, targets []*target, n, size, conc int) (int, error) {
	per := min(n, maxBatchMsgs)
	payload := makePayload(size)
	for per > 1 && len(base64.StdEncoding.EncodeToString(payload))*per > maxBatchBody-1024 {
		per /= 2
	}
	full, err := batchBody(per, payload)
	if err != nil {
		return 0, err
	}
	batches := (n + per - 1) / per
	last := full
	if r := n % per; r != 0 {
		if last, err = batchBody(r, payload); err != nil {
			return 0, err
		}
	}
	client := newClient(conc)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, accepted atomic.Int64
	var wg sync.WaitGroup
	for g := range conc {
		t := targets[g%len(targets)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ws workerStats
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(batches) {
					return
				}
				body := full
				if i == int64(batches-1) {
					body = last
				}
				for ctx.Err() == nil {
					status, rb, err := setupPost(ctx, client, t.batch, "application/json", body)
					switch {
					case err != nil:
						cancel(fmt.Errorf("prefill: %w", err))
					case status == http.StatusAccepted:
						a, _ := parseAccepted(rb)
						accepted.Add(int64(a))
					case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
						ws.wait(ctx, errBackoff)
						continue
					case routeMissing(status, rb):
						cancel(&errRouteMissing{"POST /v1/topics/" + t.topicEsc + "/produce/batch", status, string(rb)})
					default:
						cancel(fmt.Errorf("prefill: status %d: %s", status, oneLine(string(rb), 300)))
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return int(accepted.Load()), err
	}
	return int(accepted.Load()), nil
}

// send does req and counts it; on a transport error it returns nil and whether the run
// goes on (false once it ended).
func (b *bench) send(ctx context.Context, ws *workerStats, req *http.Request) (*http.Response, bool) {
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		ws.transportErr(ctx, err)
		return nil, true
	}
	ws.reqs++
	return resp, true
}
