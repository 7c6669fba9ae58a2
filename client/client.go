package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of a Client; each has an Option.
const (
	DefaultAttempts      = 5                     // tries of one call, over all nodes
	DefaultBackoffMin    = 50 * time.Millisecond // the first backoff of a retry to a node tried already
	DefaultBackoffMax    = 2 * time.Second       // backoffs double up to this
	DefaultRetryAfterMax = 5 * time.Second       // a longer Retry-After is returned, not waited for
	DefaultTimeout       = 30 * time.Second      // one attempt, beyond a long poll's wait
	answerBytesMax       = 256 << 20             // the largest answer read (100 messages of 1 MiB, encoded)
	nodesMax             = 64                    // addresses one Client takes
	userAgent            = "narad-go-client/1"
)

// Client talks to the nodes of one cluster (or one node) over the HTTP API. It is safe for
// concurrent use. Calls go to the node that answered last; a connection error or a 503
// moves the call, and the later ones, to the next node.
type Client struct {
	nodes         []string // base URLs: scheme://host:port
	hc            *http.Client
	user          string
	password      string
	auth          bool
	attempts      int
	backoffMin    time.Duration
	backoffMax    time.Duration
	retryAfterMax time.Duration
	timeout       time.Duration
	next          atomic.Uint32 // index of the node calls start at
}

// Option configures a Client.
type Option func(*Client)

// WithBasicAuth sends a user's HTTP Basic credentials with every request.
func WithBasicAuth(user, password string) Option {
	return func(c *Client) { c.user, c.password, c.auth = user, password, true }
}

// WithHTTPClient sends the requests through hc (its Timeout should be 0 or longer than a
// long poll: the client bounds each attempt itself, see WithTimeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithAttempts sets how many times one call is tried in all, over every node (1: no retry).
func WithAttempts(n int) Option { return func(c *Client) { c.attempts = max(n, 1) } }

// WithBackoff sets the backoff between tries of a node tried already in the same call:
// from lo, doubling up to hi, with jitter.
func WithBackoff(lo, hi time.Duration) Option {
	return func(c *Client) { c.backoffMin, c.backoffMax = lo, max(lo, hi) }
}

// WithRetryAfterMax sets the longest Retry-After the client waits for; an answer asking
// for longer is returned to the caller.
func WithRetryAfterMax(d time.Duration) Option { return func(c *Client) { c.retryAfterMax = d } }

// WithTimeout bounds one attempt (a long poll gets its wait on top).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// New returns a client of the nodes at addrs: "host:port" (http) or a URL
// "http://host:port" / "https://host:port". An entry may hold several addresses separated
// by commas, as NARAD_URL does.
func New(addrs []string, opts ...Option) (*Client, error) {
	c := &Client{attempts: DefaultAttempts, backoffMin: DefaultBackoffMin, backoffMax: DefaultBackoffMax,
		retryAfterMax: DefaultRetryAfterMax, timeout: DefaultTimeout}
	for _, a := range addrs {
		for _, one := range strings.Split(a, ",") {
			if one = strings.TrimSpace(one); one == "" {
				continue
			}
			base, err := baseURL(one)
			if err != nil {
				return nil, err
			}
			c.nodes = append(c.nodes, base)
		}
	}
	switch {
	case len(c.nodes) == 0:
		return nil, errors.New("narad client: no node address")
	case len(c.nodes) > nodesMax:
		return nil, fmt.Errorf("narad client: %d node addresses, at most %d", len(c.nodes), nodesMax)
	}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		c.hc = &http.Client{Transport: tr}
	}
	return c, nil
}

// baseURL turns an address into scheme://host:port.
func baseURL(a string) (string, error) {
	if !strings.Contains(a, "://") {
		a = "http://" + a
	}
	u, err := url.Parse(a)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("narad client: bad node address %q: want host:port or http(s)://host:port", a)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Nodes is the base URLs of the nodes the client talks to.
func (c *Client) Nodes() []string { return append([]string(nil), c.nodes...) }

// Close closes the idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// call is one API request.
type call struct {
	method      string
	path        string // escaped
	query       url.Values
	body        []byte
	contentType string
	// produce marks a request a retry may duplicate: it is retried only when its first
	// attempt cannot have been stored (429, 507, a connection never made), unless
	// mayDuplicate.
	produce      bool
	mayDuplicate bool
	wait         time.Duration // a long poll's wait: the attempt's bound grows by it
}

// answer is a response read in full.
type answer struct {
	status int
	header http.Header
	body   []byte
	node   string // the base URL of the node that answered
}

// do sends cl, retrying and failing over where that is safe, and returns the first answer
// of status below 400 or an error: *Error for an error status, *NodesError when no node
// answered, the context's error when ctx ended.
func (c *Client) do(ctx context.Context, cl call) (answer, error) {
	idx := int(c.next.Load()) % len(c.nodes)
	tried := map[int]bool{}
	var last error
	for attempt := 0; attempt < c.attempts; attempt++ {
		tried[idx] = true
		a, err := c.once(ctx, c.nodes[idx], cl)
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		if err == nil && a.status < 400 {
			c.next.Store(uint32(idx))
			return a, nil
		}
		retry, move := c.retryable(cl, a, err)
		if err == nil {
			err = c.errorOf(cl, c.nodes[idx], a)
		}
		last = err
		if move { // this call's next try, and the calls after it, go to the next node
			idx = (idx + 1) % len(c.nodes)
			c.next.Store(uint32(idx))
		}
		if !retry || attempt == c.attempts-1 {
			break
		}
		var delay time.Duration
		if !move || tried[idx] {
			delay = c.backoff(attempt)
		}
		if ra := retryAfter(a.header); ra > 0 {
			if ra > c.retryAfterMax {
				break
			}
			delay = max(delay, ra)
		}
		if err := sleep(ctx, delay); err != nil {
			return answer{}, err
		}
	}
	var e *Error
	if errors.As(last, &e) {
		return answer{}, last
	}
	return answer{}, &NodesError{Attempts: len(tried), Err: last}
}

// once sends one attempt to node.
func (c *Client) once(ctx context.Context, node string, cl call) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+cl.wait)
	defer cancel()
	u := node + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
	if err != nil {
		return answer{}, err
	}
	if cl.contentType != "" {
		req.Header.Set("Content-Type", cl.contentType)
	}
	req.Header.Set("User-Agent", userAgent)
	if c.auth {
		req.SetBasicAuth(c.user, c.password)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, answerBytesMax))
	_ = resp.Body.Close() // read whole: a close error changes nothing
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b, node: node}, nil
}

// retryable says whether a failed attempt may be tried again, and whether on the next
// node. A produce is tried again only when the attempt cannot have stored anything (a
// connection never made, 429, 507) unless the caller accepted duplicates.
func (c *Client) retryable(cl call, a answer, err error) (retry, move bool) {
	blind := !cl.produce || cl.mayDuplicate
	switch {
	case err != nil && notSent(err):
		return true, true
	case err != nil:
		return blind, true
	case a.status == http.StatusServiceUnavailable:
		return blind, true
	case a.status == http.StatusTooManyRequests:
		return true, false
	case a.status == http.StatusInsufficientStorage:
		return cl.produce, false
	}
	return false, false
}

// notSent reports whether err shows that the request never reached a node: the
// connection could not be made, or net/http found the kept-alive connection it took
// closed by the node before it wrote the request (its error has no exported type).
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "server closed idle connection")
}

// errorOf is the *Error of an error answer.
func (c *Client) errorOf(cl call, node string, a answer) error {
	e := &Error{Status: a.status, Method: cl.method, Path: cl.path, Node: node, RetryAfter: retryAfter(a.header)}
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(a.body, &body) == nil {
		e.Message = body.Error
	} else {
		e.Message = strings.TrimSpace(string(a.body[:min(len(a.body), 200)]))
	}
	return e
}

// backoff is the wait before try attempt+1 of a node tried already: exponential with
// full jitter.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.backoffMin << min(attempt, 20)
	if d <= 0 || d > c.backoffMax {
		d = c.backoffMax
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header given in seconds; 0 when absent or malformed.
func retryAfter(h http.Header) time.Duration {
	s := h.Get("Retry-After")
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// getJSON sends GET path?q and decodes a 200's body into out.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, out any) error {
	return c.sendJSON(ctx, http.MethodGet, path, q, nil, out)
}

// sendJSON sends in (when not nil) as a JSON body and decodes the answer into out (when
// not nil and the answer has a body).
func (c *Client) sendJSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	cl := call{method: method, path: path, query: q}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		cl.body, cl.contentType = b, "application/json"
	}
	a, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	if out == nil || len(a.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(a.body, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// pathOf joins escaped segments: pathOf("/v1/topics", name, "produce").
func pathOf(base string, segs ...string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}
