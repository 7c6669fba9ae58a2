package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"testing"

	"github.com/narad/narad/core/node"
)

// nopBroker answers Produce at once; the rest is the fake's.
type nopBroker struct{ *fakeBroker }

func (*nopBroker) Produce(_ context.Context, _ string, msgs []node.ProduceMessage) (int, error) {
	return len(msgs), nil
}

// rewindBody is a request body that can be replayed without allocating.
type rewindBody struct{ bytes.Reader }

func (*rewindBody) Close() error { return nil }

// nopWriter is a ResponseWriter that keeps nothing: it isolates the handler's own
// allocations from httptest.ResponseRecorder's.
type nopWriter struct {
	h      http.Header
	status int
}

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(status int)      { w.status = status }

// BenchmarkProduceHandler measures the single-message produce path (DESIGN.md section 7):
// a 1 KiB payload with a key, straight on the handler. "recorder" answers into a fresh
// httptest.ResponseRecorder per request (as the server's own response writer would cost
// something too); "handler" answers into a reused writer, so its allocs/op are the
// handler's alone.
func BenchmarkProduceHandler(b *testing.B) {
	s := New(&nopBroker{newFakeBroker()}, Options{Logger: slog.New(slog.DiscardHandler), InFlightMax: 64})
	h := s.Handler()
	payload := bytes.Repeat([]byte("p"), 1024)
	newReq := func() (*http.Request, *rewindBody) {
		body := &rewindBody{}
		r := httptest.NewRequest("POST", "/v1/topics/orders/produce?key=user-42", nil)
		r.Header.Set("Content-Type", "application/octet-stream")
		r.Body, r.ContentLength = body, int64(len(payload))
		return r, body
	}
	run := func(b *testing.B, serve func(r *http.Request) int) {
		r, body := newReq()
		b.ReportAllocs()
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			body.Reset(payload)
			if status := serve(r); status != http.StatusAccepted {
				b.Fatalf("status %d", status)
			}
		}
	}
	b.Run("recorder", func(b *testing.B) {
		run(b, func(r *http.Request) int {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec.Code
		})
	})
	b.Run("handler", func(b *testing.B) {
		w := &nopWriter{h: http.Header{}}
		run(b, func(r *http.Request) int {
			h.ServeHTTP(w, r)
			return w.status
		})
	})
}

// TestProduceHandlerAllocs keeps the produce path lean: the payload and the key are its
// only allocations. The race detector makes sync.Pool drop items at random, so the count
// is checked only without it.
func TestProduceHandlerAllocs(t *testing.T) {
	if raceEnabled() {
		t.Skip("allocation counts are not exact under the race detector")
	}
	s := New(&nopBroker{newFakeBroker()}, Options{Logger: slog.New(slog.DiscardHandler), InFlightMax: 64})
	h := s.Handler()
	payload := []byte("payload")
	body := &rewindBody{}
	r := httptest.NewRequest("POST", "/v1/topics/orders/produce?key=k&partition=1", nil)
	r.Header.Set("Content-Type", "application/octet-stream")
	r.Body, r.ContentLength = body, int64(len(payload))
	w := &nopWriter{h: http.Header{}}
	serve := func() {
		body.Reset(payload)
		h.ServeHTTP(w, r)
	}
	serve() // make the metric children
	const allocsMax = 2
	if allocs := testing.AllocsPerRun(200, serve); allocs > allocsMax || w.status != http.StatusAccepted {
		t.Fatalf("status %d, %.1f allocs per produce, want at most %d", w.status, allocs, allocsMax)
	}
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
