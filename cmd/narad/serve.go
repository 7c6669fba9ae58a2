package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/httpapi"
	"github.com/narad/narad/io/nodeshell"
)

const (
	// shutdownTimeout bounds the wait for requests being served on shutdown. It is longer
	// than the longest long poll (10 s), so that a consumer parked at the signal gets its
	// true answer rather than a cut connection.
	shutdownTimeout = 15 * time.Second
	// readyPollInterval is how often startup looks whether the node has recovered (the
	// shell has no notification for it), to log the recovery time.
	readyPollInterval = 5 * time.Millisecond
	// recoveringLogInterval spaces the "still recovering" lines of a long recovery.
	recoveringLogInterval = 5 * time.Second
)

// config is what serve runs with.
type config struct {
	data               string     // data directory (io/nodeshell's root)
	addr               string     // HTTP listen address
	logLevel           slog.Level // minimum level logged
	nodeID             string     // node name, shown as owner_node
	produceInFlightMax int        // produce requests served at once; 0: unlimited
	// wrapFS, set by tests only, wraps the data directory's file system of a single
	// node: disk faults injected into the real shell.
	wrapFS func(disk.FS) disk.FS

	// Access control (security.go).
	dev           bool   // security off; refused unless addr is loopback
	adminPassword string // the root user's password on a new cluster's first start; "": generated
	metricsAddr   string // a second address serving /metrics without credentials; "": none
	tlsCert       string // with tlsKey: serve HTTPS
	tlsKey        string

	// Cluster mode (cluster.go).
	id        uint64            // member id (the metastore's raft id)
	advertise string            // address peers and clients reach; "" see advertised
	peers     map[uint64]string // the initial members' addresses; nil: a cluster of one
	secret    []byte            // the cluster secret, with peers

	// node holds the core's settings: -produce-local-partitions sets
	// ProduceLocalPartitions, serve sets its NodeID, Addr and Meta.ID (and Meta.Voters
	// with -peers). The others keep the core's defaults (their zero values), which is
	// what the command line gives: only tests change them (small partition segments, to
	// see retention remove one).
	node node.Config
}

// runServe is `narad serve`: parse the flags, then serve until a signal on stop.
func runServe(args []string, stderr io.Writer, stop <-chan os.Signal) int {
	cfg, err := parseServeFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "narad serve:", err)
		return 2
	}
	return serve(cfg, newLogger(stderr, cfg.logLevel), stop)
}

// daemon is a running node: the shell, the HTTP layer in front of it and the server.
type daemon struct {
	cfg       config
	log       *slog.Logger
	shell     *nodeshell.Shell
	api       *httpapi.Server
	requests  requestCounter
	hs        *http.Server
	metrics   *http.Server // -metrics-addr's server; nil without one
	ln        net.Addr     // the address listened on (the port chosen for ":0")
	advertise string       // the address the node is reached at
	served    chan error   // hs.Serve's return
	sec       *security    // nil with -dev
}

// serve opens the node, serves HTTP on cfg.addr until a signal on stop, a fatal node error
// or a failure of the HTTP server, then shuts down. It returns the exit status: 0 after a
// clean shutdown, 1 when the node failed or something could not start or stop cleanly.
func serve(cfg config, logger *slog.Logger, stop <-chan os.Signal) int {
	started := time.Now()
	logger.Info("starting", "version", versionString(), "data", cfg.data, "addr", cfg.addr, "node_id", cfg.nodeID,
		"id", cfg.id, "peers", len(cfg.peers))
	d, err := start(cfg, logger)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	logger.Info("listening", "addr", d.addr(), "data", cfg.data, "advertise", d.advertise)
	status, failed, serving := d.wait(stop, started)
	stopping := time.Now()
	status = max(status, d.shutdown(stop, failed, serving))
	logger.Info("stopped", "status", status, "shutdown", time.Since(stopping).Round(time.Millisecond),
		"uptime", time.Since(started).Round(time.Second))
	return status
}

// start listens, opens the node (its recovery goes on in the background; it joins the
// members under its advertised address, by default the one it listens on), registers its
// metrics beside the HTTP layer's, and starts serving HTTP. On an error nothing is left
// open.
func start(cfg config, logger *slog.Logger) (*daemon, error) {
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, err
	}
	advertise := cfg.advertised(ln.Addr().String())
	sec, err := newSecurity(cfg, logger)
	if err != nil {
		return nil, errors.Join(err, ln.Close())
	}
	shell, err := openShell(cfg, ln.Addr().String(), advertise, logger)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open the node in %s: %w", cfg.data, err), ln.Close())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := shell.Register(reg); err != nil {
		return nil, errors.Join(fmt.Errorf("register the node's metrics: %w", err), shell.Close(), ln.Close())
	}
	d := &daemon{cfg: cfg, log: logger, shell: shell, served: make(chan error, 1), advertise: advertise, sec: sec}
	d.requests.idle = make(chan struct{}, 1)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "narad_http_requests_in_flight",
		Help: "HTTP requests being served, long polls included (a scrape counts itself).",
	}, func() float64 { return float64(d.requests.n.Load()) }))
	opts := httpapi.Options{Logger: logger, Registry: reg, InFlightMax: cfg.produceInFlightMax}
	if sec != nil {
		opts.Auth = sec.auth
		shell.WatchUsers(sec.onUsers)
		go sec.hashRoot(shell.SetRootHash) // shutdown waits for it before it closes the node
	}
	d.api = httpapi.New(shell, opts)
	mhs, mln, err := metricsServer(cfg.metricsAddr, reg, logger)
	if err != nil {
		return nil, errors.Join(err, shell.Close(), ln.Close())
	}
	d.ln = ln.Addr()
	d.hs = &http.Server{
		Handler:           d.requests.wrap(d.api.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if cfg.tlsCert != "" {
		go func() { d.served <- d.hs.ServeTLS(ln, cfg.tlsCert, cfg.tlsKey) }()
	} else {
		go func() { d.served <- d.hs.Serve(ln) }()
	}
	if mhs != nil {
		d.metrics = mhs
		logger.Info("serving /metrics without credentials", "metrics_addr", mln.Addr().String())
		go func() { _ = mhs.Serve(mln) }() // ends with Close at shutdown
	}
	return d, nil
}

// addr is the address the server listens on.
func (d *daemon) addr() string { return d.ln.String() }

// wait blocks until a signal on stop, a fatal node error or the HTTP server stopping. On
// the way it logs when the node has recovered. It returns the exit status so far, whether
// the node failed, and whether the HTTP server is still serving.
func (d *daemon) wait(stop <-chan os.Signal, started time.Time) (status int, failed, serving bool) {
	poll := time.NewTicker(readyPollInterval)
	defer poll.Stop()
	recovering := true
	lastLog := started
	for {
		select {
		case sig := <-stop:
			d.log.Info("shutting down", "signal", sig.String())
			return 0, false, true
		case <-d.shell.Failed():
			err := d.shell.Failure()
			if errors.Is(err, meta.ErrRemoved) { // decommissioned: a clean end
				d.log.Info("removed from the cluster; exiting", "err", err)
				return 0, true, true
			}
			msg := "node failed; exiting (a restart recovers from the disk)"
			if errors.Is(err, meta.ErrForgotten) || errors.Is(err, meta.ErrLostState) {
				msg = "node failed; exiting (a restart will not help: see err)"
			}
			d.log.Error(msg, "err", err)
			return 1, true, true
		case err := <-d.served:
			d.log.Error("http server stopped", "err", err)
			return 1, false, false
		case now := <-poll.C:
			if !recovering {
				continue
			}
			err := d.api.Ready() // the node recovered and, with security on, holds a user
			if err == nil {
				recovering = false
				poll.Stop() // nothing more to poll: the other cases are channels
				d.log.Info("ready", "data", d.cfg.data, "addr", d.addr(), "node_id", d.cfg.nodeID,
					"recovery", now.Sub(started).Round(time.Millisecond))
				continue
			}
			if now.Sub(lastLog) >= recoveringLogInterval {
				lastLog = now
				d.log.Info("still recovering", "reason", err, "for", now.Sub(started).Round(time.Second))
			}
		}
	}
}

// shutdown stops serving and closes the node. After a signal the daemon drains first:
// /healthz and every /v1 route answer 503 to new requests (clients and load balancers see
// why, rather than a refused connection) while the requests being served finish, a long
// poll included; then the listener closes. After a node failure there is no drain: the
// requests being served get the node's answer (a produce 500), and new connections are
// refused at once. Both waits together are bounded by shutdownTimeout, and another signal
// cuts them short. Then the shell persists the checkpoint and the acks and closes the
// files. shutdown returns 1 if the node failed on the way or did not close cleanly.
func (d *daemon) shutdown(stop <-chan os.Signal, failed, serving bool) int {
	if !failed {
		d.api.BeginShutdown()
	}
	d.shutdownHTTP(stop, !failed && serving)
	if serving {
		if err := <-d.served; !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("the HTTP server stopped on its own", "err", err)
		}
	}
	status := 0
	if d.sec != nil {
		<-d.sec.hashed // a bcrypt at most: its last step must not run on a closed node
	}
	if err := d.shell.Close(); err != nil {
		d.log.Error("closing the node", "err", err)
		status = 1
	}
	if err := d.shell.Failure(); err != nil && !failed {
		d.log.Error("node failed while shutting down", "err", err)
		status = 1
	}
	return status
}

// shutdownHTTP drains (if drain) and stops the HTTP server, waiting for the requests being
// served at most shutdownTimeout or until a signal arrives; then it closes what is left.
func (d *daemon) shutdownHTTP(stop <-chan os.Signal, drain bool) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-stop:
			d.log.Warn("another signal: not waiting for the requests being served", "signal", sig.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	if drain {
		if n := d.requests.n.Load(); n > 0 {
			d.log.Info("draining: new requests answer 503 until those being served finish", "requests", n)
		}
		d.requests.drain(ctx)
	}
	if err := d.hs.Shutdown(ctx); err != nil {
		d.log.Warn("requests still being served; closing their connections", "err", err)
		_ = d.hs.Close()
	}
	if d.metrics != nil {
		_ = d.metrics.Close()
	}
}

// requestCounter counts the HTTP requests being served, so that shutdown can wait for
// them while the listener still answers new ones. Two atomic adds per request: it sits
// on the produce path.
type requestCounter struct {
	n        atomic.Int64
	draining atomic.Bool
	idle     chan struct{} // capacity 1: a token when n drops to 0 while draining
}

func (c *requestCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		defer c.done()
		h.ServeHTTP(w, r)
	})
}

// done ends a request. A drain that saw n > 0 has set draining before this Add can bring
// n to 0, so it gets the token; one that read n after this Add sees 0 itself.
func (c *requestCounter) done() {
	if c.n.Add(-1) == 0 && c.draining.Load() {
		select {
		case c.idle <- struct{}{}:
		default:
		}
	}
}

// drain waits until no request is being served or ctx is done. Requests that arrive
// meanwhile are answered 503 at once, so they do not hold it up for long.
func (c *requestCounter) drain(ctx context.Context) {
	c.draining.Store(true)
	for c.n.Load() > 0 {
		select {
		case <-c.idle:
		case <-ctx.Done():
			return
		}
	}
}
