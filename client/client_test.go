package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narad/narad/client"
)

// fake is a node that answers every request with status (and Retry-After when set),
// counting the requests.
type fake struct {
	srv        *httptest.Server
	status     atomic.Int64
	retryAfter string
	hits       atomic.Int64
}

func newFake(t *testing.T, status int) *fake {
	f := &fake{}
	f.status.Store(int64(status))
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		s := int(f.status.Load())
		if f.retryAfter != "" && s >= 400 {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s)
		switch {
		case s >= 400:
			_, _ = w.Write([]byte(`{"error":"fake says no"}`))
		case r.URL.Path == "/v1/topics":
			_, _ = w.Write([]byte(`{"topics":[{"name":"a"}],"next_page_token":""}`))
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) addr() string { return f.srv.Listener.Addr().String() }

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

func fastClient(t *testing.T, addrs []string, opts ...client.Option) *client.Client {
	c, err := client.New(addrs, append([]client.Option{client.WithBackoff(time.Millisecond, 5*time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestErrorStatusesMatchTheirSentinels(t *testing.T) {
	for status, sentinel := range map[int]error{400: client.ErrBadRequest, 401: client.ErrUnauthorized,
		403: client.ErrForbidden, 404: client.ErrNotFound, 409: client.ErrConflict, 410: client.ErrGone,
		413: client.ErrTooLarge, 415: client.ErrUnsupportedMedia, 500: client.ErrInternal} {
		f := newFake(t, status)
		_, err := fastClient(t, []string{f.addr()}).ListTopics(context.Background())
		var e *client.Error
		if !errors.As(err, &e) || e.Status != status || e.Message != "fake says no" || !errors.Is(err, sentinel) ||
			errors.Is(err, client.ErrUnavailable) || client.StatusOf(err) != status {
			t.Errorf("status %d: error %v (%#v)", status, err, e)
		}
		if f.hits.Load() != 1 {
			t.Errorf("status %d: %d requests, want 1 (not retried)", status, f.hits.Load())
		}
	}
}

func TestProduceIsNotRetriedBlindly(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, http.StatusServiceUnavailable)
	c := fastClient(t, []string{f.addr()}, client.WithAttempts(4))
	if err := c.Produce(ctx, "t", []byte("x")); !errors.Is(err, client.ErrUnavailable) || f.hits.Load() != 1 {
		t.Fatalf("produce on 503: %v after %d requests, want ErrUnavailable after 1", err, f.hits.Load())
	}
	if err := c.Produce(ctx, "t", []byte("x"), client.RetryMayDuplicate()); !errors.Is(err, client.ErrUnavailable) ||
		f.hits.Load() != 5 {
		t.Fatalf("produce on 503 with RetryMayDuplicate: %v after %d requests in all, want 5", err, f.hits.Load())
	}
	up := newFake(t, http.StatusAccepted) // a 503 not retried still sends the next call elsewhere
	two := fastClient(t, []string{f.addr(), up.addr()})
	if err := two.Produce(ctx, "t", []byte("x")); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("produce on 503 of two nodes: %v", err)
	}
	if err := two.Produce(ctx, "t", []byte("x")); err != nil || up.hits.Load() != 1 {
		t.Fatalf("the produce after a 503: %v, %d requests to the other node", err, up.hits.Load())
	}
	f.status.Store(http.StatusTooManyRequests) // nothing stored: retried without the option
	f.hits.Store(0)
	if _, err := c.ProduceBatch(ctx, "t", []client.BatchMessage{{Payload: []byte("x")}}); !errors.Is(err,
		client.ErrTooManyRequests) || f.hits.Load() != 4 {
		t.Fatalf("batch produce on 429: %v after %d requests, want 4", err, f.hits.Load())
	}
}

func TestRetryAfterIsHonouredUpToItsBound(t *testing.T) {
	f := newFake(t, http.StatusTooManyRequests)
	f.retryAfter = "1"
	c := fastClient(t, []string{f.addr()}, client.WithRetryAfterMax(500*time.Millisecond))
	_, err := c.ListTopics(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.RetryAfter != time.Second || f.hits.Load() != 1 {
		t.Fatalf("429 asking for more than the bound: %v after %d requests, want returned at once", err, f.hits.Load())
	}
	c = fastClient(t, []string{f.addr()}, client.WithAttempts(2))
	began := time.Now()
	f.hits.Store(0)
	_, _ = c.ListTopics(context.Background())
	if waited := time.Since(began); waited < time.Second || f.hits.Load() != 2 {
		t.Fatalf("429 with Retry-After 1: %d requests in %v, want 2 at least 1 s apart", f.hits.Load(), waited)
	}
}

func TestFailoverMovesToTheNextNodeAndStays(t *testing.T) {
	down := newFake(t, http.StatusServiceUnavailable)
	up := newFake(t, http.StatusOK)
	c := fastClient(t, []string{closedAddr(t), down.addr(), up.addr()})
	for range 3 {
		ts, err := c.ListTopics(context.Background())
		if err != nil || len(ts) != 1 || ts[0].Name != "a" {
			t.Fatalf("list over a dead node and a 503: %v %v", ts, err)
		}
	}
	if down.hits.Load() != 1 || up.hits.Load() != 3 {
		t.Fatalf("503 node asked %d times, live one %d; want 1 and 3 (later calls start at the live node)",
			down.hits.Load(), up.hits.Load())
	}
	// A produce moves past a node it could not connect to: nothing was sent.
	c = fastClient(t, []string{closedAddr(t), up.addr()})
	if err := c.Produce(context.Background(), "t", []byte("x")); err != nil {
		t.Fatalf("produce past a refused connection: %v", err)
	}
	_, err := fastClient(t, []string{closedAddr(t)}).ListTopics(context.Background())
	var ne *client.NodesError
	if !errors.As(err, &ne) {
		t.Fatalf("no node listening: %v, want a *NodesError", err)
	}
}

func TestBadAddresses(t *testing.T) {
	for _, a := range []string{"", "ftp://x:1", "http://", "http://h:1/path"} {
		if _, err := client.New([]string{a}); err == nil {
			t.Errorf("New(%q) accepted", a)
		}
	}
	c, err := client.New([]string{"a:1, https://b:2/", "c:3"})
	if err != nil || len(c.Nodes()) != 3 || c.Nodes()[1] != "https://b:2" {
		t.Fatalf("New: %v %v", c.Nodes(), err)
	}
}
