package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/io/walshell"
)

// shutdownTimeout bounds the wait for in-flight requests on shutdown.
const shutdownTimeout = 10 * time.Second

// server is the daemon's state: the WAL and the HTTP handlers in front of it.
type server struct {
	log      *slog.Logger
	wal      *walshell.Shell
	mux      *http.ServeMux
	shutting atomic.Bool   // shutdown began: healthz and produce answer 503
	rr       atomic.Uint64 // round-robin counter for produces with neither key nor partition

	closeOnce sync.Once
	closeErr  error
}

// newServer opens (and so recovers) the WAL under cfg.data and builds the HTTP handlers.
func newServer(cfg config, logger *slog.Logger) (*server, error) {
	start := time.Now()
	shell, rec, err := walshell.Open(cfg.data, wal.Config{})
	if err != nil {
		return nil, fmt.Errorf("open WAL in %s: %w", cfg.data, err)
	}
	logRecovery(logger, cfg.data, rec, time.Since(start))
	s := &server{log: logger, wal: shell, mux: http.NewServeMux()}
	s.routes()
	return s, nil
}

func logRecovery(logger *slog.Logger, data string, rec *wal.Recovery, took time.Duration) {
	logger.Info("wal recovered",
		"data", data,
		"checkpoint", rec.Checkpoint,
		"next_seq", rec.NextSeq,
		"records_to_replay", len(rec.Records),
		"corrupt_skipped", rec.CorruptSkip,
		"decisions", rec.Decisions,
		"took", took)
	if len(rec.Records) > 0 {
		// Nothing dispatches records out of the WAL yet: they stay there (the checkpoint
		// does not move) and will be dispatched once the partition logs exist.
		logger.Warn("recovered records are not dispatched by this version; they stay in the WAL",
			"first_seq", rec.Records[0].Seq, "last_seq", rec.Records[len(rec.Records)-1].Seq)
	}
}

func (s *server) routes() {
	s.mux.HandleFunc("GET /healthz", s.handleHealthz)
	s.mux.HandleFunc("GET /readyz", s.handleReadyz)
	s.mux.HandleFunc("POST /v1/topics/{topic}/produce", s.handleProduce)
	// The same paths with another method: 405 in JSON rather than the mux's plain text.
	s.mux.HandleFunc("/healthz", methodNotAllowed("GET, HEAD"))
	s.mux.HandleFunc("/readyz", methodNotAllowed("GET, HEAD"))
	s.mux.HandleFunc("/v1/topics/{topic}/produce", methodNotAllowed("POST"))
	// Every other route, /v1 included, is a JSON 404.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
}

// Handler returns the HTTP handler of every route.
func (s *server) Handler() http.Handler { return s.mux }

// beginShutdown makes healthz and produce answer 503 from now on.
func (s *server) beginShutdown() { s.shutting.Store(true) }

// Close begins shutdown if it had not begun, then closes the WAL: it waits for every
// append already staged to be answered. Later appends are refused. Idempotent.
func (s *server) Close() error {
	s.beginShutdown()
	s.closeOnce.Do(func() { s.closeErr = s.wal.Close() })
	return s.closeErr
}

func (s *server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	if s.shutting.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz answers 200 while the WAL is open and not failed. (Once there is a
// metastore, readiness will also need its replica caught up with a known leader.)
func (s *server) handleReadyz(w http.ResponseWriter, _ *http.Request) {
	switch err := s.wal.Failed(); {
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "wal failed: "+err.Error())
	case s.shutting.Load():
		writeError(w, http.StatusServiceUnavailable, "shutting down")
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only plain maps of strings are written: cannot happen
		panic("narad: marshal response: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// runServe is `narad serve`: open the WAL, serve HTTP until a signal on stop, shut down.
func runServe(args []string, stderr io.Writer, stop <-chan os.Signal) int {
	cfg, err := parseServeFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "narad serve:", err)
		return 2
	}
	logger := newLogger(stderr, cfg.logLevel)
	logger.Info("starting", "version", versionString(), "data", cfg.data, "addr", cfg.addr)
	srv, err := newServer(cfg, logger)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		logger.Error("cannot listen", "addr", cfg.addr, "err", err)
		if err := srv.Close(); err != nil {
			logger.Error("closing the WAL", "err", err)
		}
		return 1
	}
	return serveUntil(srv, ln, stop, logger)
}

// serveUntil serves on ln until a signal arrives on stop (or serving fails), then shuts
// down: healthz and produce turn 503, the HTTP server waits up to shutdownTimeout for
// in-flight requests (a second signal cuts that short), and the WAL is closed.
func serveUntil(srv *server, ln net.Listener, stop <-chan os.Signal, logger *slog.Logger) int {
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("listening", "addr", ln.Addr().String())
	status, serving := 0, true
	select {
	case sig := <-stop:
		logger.Info("shutting down", "signal", sig)
	case err := <-served:
		logger.Error("http server stopped", "err", err)
		status, serving = 1, false
	}
	srv.beginShutdown()
	shutdownHTTP(hs, stop, logger)
	if serving {
		<-served // http.ErrServerClosed, as soon as Shutdown began
	}
	if err := srv.Close(); err != nil {
		logger.Error("closing the WAL", "err", err)
		status = 1
	}
	st := srv.wal.Stats()
	logger.Info("stopped", "groups_synced", st.GroupsSynced, "records_synced", st.RecordsSynced,
		"bytes_synced", st.BytesSynced)
	return status
}

// shutdownHTTP stops accepting connections and waits for in-flight requests, at most
// shutdownTimeout or until another signal arrives, then closes what is left.
func shutdownHTTP(hs *http.Server, stop <-chan os.Signal, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-stop:
			logger.Warn("second signal: not waiting for in-flight requests", "signal", sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := hs.Shutdown(ctx); err != nil {
		logger.Warn("in-flight requests did not finish; closing their connections", "err", err)
		_ = hs.Close()
	}
}
