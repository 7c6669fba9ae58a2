// Command narad-bench is a load generator for Narad's HTTP API (docs: /work/shared/API.md).
//
//	narad-bench -addr 127.0.0.1:7942[,127.0.0.1:7943…] -mode MODE -workers N -duration 10s
//	            [-size 1024] [-batch 100] [-topic bench] [-partitions 3] [-create-topic]
//	            [-prefill N] [-consumers 16] [-rate 0] [-drain 45s] [-route spread] [-json]
//
// -addr takes one node or a comma-separated list of nodes of one cluster: worker i (and
// consumer i) talks to address i mod n, prefill batches are spread the same way, and the
// topic is created through the first address (any node forwards topic writes to the
// metastore leader). -route owner (produce and latency modes) instead pins worker i to
// partition i mod P and sends it to that partition's owner, as a client that knows the
// owners does; the latency mode's consumers are pinned the same way (owners.go).
//
// Modes:
//
//	produce        each worker loops POST /v1/topics/{topic}/produce with a -size byte body;
//	               counts 202s
//	produce-batch  POST …/produce/batch with -batch base64 messages of -size bytes; counts
//	               the accepted messages
//	consume-ack    GET …/consume?wait=1s (&max=-batch when -batch > 1), then acknowledges
//	               every lease (one POST …/ack?receipt_handle=H each when -batch is 1, one
//	               batch ack otherwise); counts acknowledged messages. -prefill N first
//	               produces N messages with batch produce.
//	bare           drives, like produce, a bare net/http server started in this process that
//	               discards the body and answers 202: the machine's ceiling per request
//	all            the standard suite, printed as a Markdown table: bare ×64; produce 1 KiB
//	               ×1, ×16, ×64, ×256; produce-batch 100×256 B ×16; consume-ack single ×64
//	               and batch 100 ×16 (256 B, prefilled). -workers/-size/-batch are ignored.
//	latency        -workers producers POST …/produce with -size byte bodies (at least 30), each
//	               carrying this run's mark and a unique id, at -rate messages/s in total
//	               (0: as fast as they can) for -duration, while -consumers consumers
//	               long-poll GET …/consume?wait=1s&max=-batch and batch-ack what they get.
//	               For every message it reports the time from its 202 (the response read by
//	               the producer) to its first receipt by a consumer (the body read): the
//	               "202 to consumable" latency, p50/p99/max. When producing stops, the
//	               consumers go on until every 202-acknowledged message was received or
//	               -drain passed; messages still missing are reported as lost, besides
//	               duplicates (second receipts), messages received whose produce got no 202,
//	               and payloads of other runs. Producer and consumer share this process's
//	               clock. Messages/s and the per-request latency are the producers'; a
//	               produce sent before the end of -duration is never cancelled (up to 30 s
//	               more), so the run lasts until it is answered. At most 4,194,304 messages
//	               per run.
//	move           against a cluster: fills partition 0 with -move-mib MiB of -size byte
//	               messages, runs -workers producers pinned to the other partitions for
//	               -duration (the baseline), then again while partition 0 moves to another
//	               member (POST /v1/cluster/moves) until it is done; reports produce
//	               p50/p99 of both runs, the move's MiB/s and its freeze (from the
//	               destination's metrics). make bench-move starts the cluster.
//
// Each run reports messages/s (and requests/s for batched modes), per-request latency
// p50/p99/max, every unexpected status with the first body seen, and total errors. A route
// the server does not serve (405, or a 404 that is not an API error for the topic) stops the run
// and is named in the report. Only loopback targets are allowed. Exit status: 0 when every
// run completed without errors (and, in latency mode, every message answered 202 was
// received), 1 otherwise, 2 for bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	modeProduce = "produce"
	modeBatch   = "produce-batch"
	modeConsume = "consume-ack"
	modeBare    = "bare"
	modeAll     = "all"
	modeLatency = "latency"
	modeMove    = "move"

	maxDuration = time.Hour
	maxWorkers  = 4096
	maxAddrs    = 16
	maxRate     = 1e7
)

type config struct {
	addr        string   // as given: one host:port or a comma-separated list
	addrs       []string // addr split and checked by validate
	mode        string
	moveMiB     int // move mode: MiB in the partition that moves
	workers     int
	duration    time.Duration
	size        int
	batch       int
	topic       string
	partitions  int
	createTopic bool
	prefill     int
	consumers   int
	rate        float64
	drain       time.Duration
	json        bool
	route       string // routeSpread or routeOwner (owners.go)
}

// runSpec is one run of the suite (or the only run).
type runSpec struct {
	name    string
	mode    string
	workers int
	size    int
	batch   int
	prefill int
	// latency mode only
	consumers int
	rate      float64
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

var topicName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	readCredentials(os.Getenv)
	fs := flag.NewFlagSet("narad-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.addr, "addr", "127.0.0.1:7942", "node address host:port, or a comma-separated list of a cluster's nodes (loopback only)")
	fs.StringVar(&c.mode, "mode", modeProduce, "produce | produce-batch | consume-ack | bare | all | latency | move")
	fs.IntVar(&c.moveMiB, "move-mib", 1024, "move: MiB of messages in the partition that moves")
	fs.IntVar(&c.workers, "workers", 16, "concurrent workers (one connection each)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of each run")
	fs.IntVar(&c.size, "size", 1024, "message size in bytes")
	fs.IntVar(&c.batch, "batch", 100, "messages per produce batch / consume max and batch ack (1 = single)")
	fs.StringVar(&c.topic, "topic", "bench", "topic name")
	fs.IntVar(&c.partitions, "partitions", 3, "partitions for -create-topic")
	fs.BoolVar(&c.createTopic, "create-topic", false, "create the topic first (409 is fine)")
	fs.IntVar(&c.prefill, "prefill", 0, "consume-ack: produce this many messages first (all: default 20k per second of -duration)")
	fs.IntVar(&c.consumers, "consumers", 16, "latency: concurrent consumers")
	fs.Float64Var(&c.rate, "rate", 0, "latency: produce rate in messages/s over all producers (0 = unlimited)")
	fs.DurationVar(&c.drain, "drain", 45*time.Second, "latency: how long consumers wait for missing messages after producing stops")
	fs.BoolVar(&c.json, "json", false, "print results as JSON lines")
	fs.StringVar(&c.route, "route", routeSpread, "produce, latency: spread (worker i to address i mod n) | owner (worker i to partition i mod P, sent to its owner; latency: consumers too)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "narad-bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := validate(&c); err != nil {
		fmt.Fprintln(stderr, "narad-bench:", err)
		return 2
	}
	if c.mode == modeAll {
		return runAll(ctx, c, stdout, stderr)
	}
	if c.mode == modeMove {
		return runMove(ctx, c, stdout, stderr)
	}
	spec := runSpec{name: c.mode, mode: c.mode, workers: c.workers, size: c.size, batch: c.batch, prefill: c.prefill,
		consumers: c.consumers, rate: c.rate}
	if c.mode != modeBare {
		if err := setup(ctx, c, stderr); err != nil {
			fmt.Fprintln(stderr, "narad-bench:", err)
			return 1
		}
	}
	res, err := execute(ctx, c, spec)
	emit(stdout, c, &res)
	if err != nil {
		fmt.Fprintln(stderr, "narad-bench:", err)
		return 1
	}
	if failed(&res) {
		return 1
	}
	return 0
}

func validate(c *config) error {
	addrs, err := parseAddrs(c.addr)
	if err != nil {
		return err
	}
	c.addrs = addrs
	switch c.mode {
	case modeProduce, modeBatch, modeConsume, modeBare, modeAll, modeLatency, modeMove:
	default:
		return fmt.Errorf("unknown -mode %q (produce, produce-batch, consume-ack, bare, all, latency, move)", c.mode)
	}
	switch {
	case c.workers < 1 || c.workers > maxWorkers:
		return fmt.Errorf("-workers %d: want 1..%d", c.workers, maxWorkers)
	case c.duration <= 0 || c.duration > maxDuration:
		return fmt.Errorf("-duration %v: want > 0 and <= %v", c.duration, maxDuration)
	case c.size < 1 || c.size > maxMessage:
		return fmt.Errorf("-size %d: want 1..%d (API: 1 byte to 1 MiB)", c.size, maxMessage)
	case !topicName.MatchString(c.topic) || c.topic == "." || c.topic == "..":
		return fmt.Errorf(`-topic %q: want 1-200 characters of [A-Za-z0-9._-], not "." or ".."`, c.topic)
	case c.partitions < 1:
		return fmt.Errorf("-partitions %d: want >= 1", c.partitions)
	case c.prefill < 0:
		return fmt.Errorf("-prefill %d: want >= 0", c.prefill)
	case c.mode == modeBatch && (c.batch < 1 || c.batch > maxBatchMsgs):
		return fmt.Errorf("-batch %d: produce-batch wants 1..%d", c.batch, maxBatchMsgs)
	case c.mode == modeConsume && (c.batch < 1 || c.batch > maxConsumeMax):
		return fmt.Errorf("-batch %d: consume-ack wants 1..%d", c.batch, maxConsumeMax)
	}
	if err := validRoute(c); err != nil {
		return err
	}
	if c.mode == modeLatency {
		if err := validateLatency(c); err != nil {
			return err
		}
	}
	if c.mode == modeBatch {
		if _, err := batchBody(c.batch, makePayload(c.size)); err != nil {
			return err
		}
	}
	return nil
}

// validateLatency checks the flags only the latency mode reads.
func validateLatency(c *config) error {
	switch {
	case c.batch < 1 || c.batch > maxConsumeMax:
		return fmt.Errorf("-batch %d: latency wants 1..%d (consume max and batch ack)", c.batch, maxConsumeMax)
	case c.consumers < 1 || c.consumers > maxWorkers:
		return fmt.Errorf("-consumers %d: want 1..%d", c.consumers, maxWorkers)
	case !(c.rate >= 0 && c.rate <= maxRate): // also refuses NaN
		return fmt.Errorf("-rate %v: want 0 (unlimited) to %g messages/s", c.rate, maxRate)
	case c.size < markLen:
		return fmt.Errorf("-size %d: latency wants at least %d bytes (the message id)", c.size, markLen)
	case c.drain < 0 || c.drain > maxDuration:
		return fmt.Errorf("-drain %v: want 0 to %v", c.drain, maxDuration)
	}
	return nil
}

// parseAddrs splits a comma-separated list of loopback host:port addresses. Spaces around
// entries are ignored; an empty entry or an address listed twice is refused.
func parseAddrs(s string) ([]string, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxAddrs {
		return nil, fmt.Errorf("-addr: %d addresses, want at most %d", len(parts), maxAddrs)
	}
	addrs := make([]string, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if err := checkLoopback(p); err != nil {
			return nil, err
		}
		if seen[p] {
			return nil, fmt.Errorf("-addr: %q listed twice", p)
		}
		seen[p] = true
		addrs = append(addrs, p)
	}
	return addrs, nil
}

// checkLoopback refuses any target but 127.0.0.0/8, ::1 and localhost: this machine
// forbids load against anything else. (The dialer also refuses a non-loopback peer.)
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("-addr %q: want host:port, e.g. 127.0.0.1:7942", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-addr %q: refusing non-loopback host %q: narad-bench only targets 127.0.0.0/8, ::1 or localhost", addr, host)
}

// setup checks every node answers at all, then creates the topic through the first one
// when asked. A node that does not serve POST /v1/topics yet only earns a warning.
func setup(ctx context.Context, c config, stderr io.Writer) error {
	client := newClient(1)
	defer client.CloseIdleConnections()
	for _, addr := range c.addrs {
		if err := reach(ctx, client, newTarget(addr, c.topic)); err != nil {
			return err
		}
	}
	t := newTarget(c.addrs[0], c.topic)
	if !c.createTopic {
		return nil
	}
	cctx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	what, err := createTopic(cctx, client, t, c.partitions)
	var missing *errRouteMissing
	switch {
	case errors.As(err, &missing):
		fmt.Fprintf(stderr, "narad-bench: warning: cannot create topic %q: %v; going on\n", c.topic, err)
		return nil
	case err != nil:
		return err
	}
	if !c.json {
		fmt.Fprintf(stderr, "narad-bench: topic %q %s\n", c.topic, what)
	}
	return nil
}

// reach checks a node answers GET /healthz at all (any status), within 3 s.
func reach(ctx context.Context, client *http.Client, t *target) error {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(pctx, http.MethodGet, t.healthz, nil)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w", t.addr, err)
	}
	drain(resp)
	return nil
}

func newResult(spec runSpec) Result {
	res := Result{Name: spec.name, Mode: spec.mode, Workers: spec.workers, Size: spec.size}
	if spec.mode == modeBatch || spec.mode == modeConsume || spec.mode == modeLatency {
		res.Batch = spec.batch
	}
	return res
}

// execute performs one run. The error is for a run that could not start or whose prefill
// failed; it is also in the result's note.
func execute(ctx context.Context, c config, spec runSpec) (Result, error) {
	res := newResult(spec)
	addrs := c.addrs
	if spec.mode == modeBare {
		srv, err := startBare()
		if err != nil {
			res.Note = "bare server: " + err.Error()
			return res, errors.New(res.Note)
		}
		defer srv.stop()
		addrs = []string{srv.addr}
	}
	if len(addrs) > 1 {
		res.Nodes = len(addrs)
	}
	targets, producers, err := runTargets(ctx, c, addrs)
	if err != nil {
		res.Note = err.Error()
		return res, err
	}
	if spec.mode == modeLatency {
		return executeLatency(ctx, c, spec, producers, res), nil
	}
	// A failed prefill is reported, and the run still goes on: it tells whether consume and
	// ack are served, and drains whatever the topic holds.
	var prefillErr error
	if spec.mode == modeConsume && spec.prefill > 0 {
		prefillErr = runPrefill(ctx, c, spec, targets, &res)
	}
	client := newClient(spec.workers)
	defer client.CloseIdleConnections()
	payload := makePayload(spec.size)
	var body []byte
	if spec.mode == modeBatch {
		var err error
		if body, err = batchBody(spec.batch, payload); err != nil {
			res.Note = err.Error()
			return res, err
		}
	}
	produceRoute := "/v1/topics/" + targets[0].topicEsc + "/produce"
	stats := newStats(spec.workers)

	start := time.Now()
	tctx, cancelT := context.WithDeadline(ctx, start.Add(c.duration))
	defer cancelT()
	rctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	b := &bench{client: client, spec: spec, cancel: cancel}
	var wg sync.WaitGroup
	for i, ws := range stats {
		t, pt := targets[i%len(targets)], producers[i%len(producers)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch spec.mode {
			case modeProduce, modeBare:
				b.produceLoop(rctx, ws, pt.produce, produceRoute, "application/octet-stream", payload, false)
			case modeBatch:
				b.produceLoop(rctx, ws, t.batch, produceRoute+"/batch", "application/json", body, true)
			case modeConsume:
				b.consumeAckLoop(rctx, ws, t, spec.batch)
			}
		}()
	}
	wg.Wait()
	mergeStats(&res, stats, time.Since(start))
	addRunNotes(ctx, c, &res)
	return res, prefillErr
}

// runPrefill fills the topic for consume-ack, noting in res how far it got.
func runPrefill(ctx context.Context, c config, spec runSpec, targets []*target, res *Result) error {
	pctx, cancel := context.WithTimeout(ctx, max(2*time.Minute, 2*c.duration))
	n, err := prefill(pctx, targets, spec.prefill, spec.size, min(spec.workers, 8))
	cancel()
	res.Prefilled = n
	if err == nil {
		return nil
	}
	res.addNote(fmt.Sprintf("prefill stopped after %d of %d messages", n, spec.prefill))
	var missing *errRouteMissing
	if errors.As(err, &missing) {
		res.MissingRoute = fmt.Sprintf("%s → %d", missing.route, missing.status)
		res.FirstErrors = map[string]string{"prefill " + strconv.Itoa(missing.status): missing.body}
	} else {
		res.Note += ": " + oneLine(err.Error(), 300)
	}
	return fmt.Errorf("prefill stopped after %d of %d messages: %w", n, spec.prefill, err)
}

func newStats(n int) []*workerStats {
	stats := make([]*workerStats, n)
	for i := range stats {
		stats[i] = &workerStats{}
	}
	return stats
}

// addRunNotes explains a run that counted nothing.
func addRunNotes(ctx context.Context, c config, res *Result) {
	if res.Messages == 0 && res.Statuses["404"] > 0 && res.MissingRoute == "" {
		res.addNote(fmt.Sprintf("no message counted and 404s: does topic %q exist? (-create-topic)", c.topic))
	}
	if res.Mode == modeConsume && res.Messages == 0 && res.EmptyPolls > 0 && res.Errors == 0 {
		res.addNote("every poll was empty: nothing to consume (-prefill N)")
	}
	if ctx.Err() != nil {
		res.addNote("interrupted")
	}
}

func failed(r *Result) bool {
	return r.Errors > 0 || r.MissingRoute != "" || (r.Latency != nil && r.Latency.Lost > 0)
}

func emit(w io.Writer, c config, r *Result) {
	if c.json {
		line, _ := json.Marshal(r)
		fmt.Fprintf(w, "%s\n", line)
		return
	}
	writeText(w, r)
}

// suite is the standard set of runs of -mode all.
func suite(c config) []runSpec {
	pre := c.prefill
	if pre == 0 {
		pre = min(max(int(20000*c.duration.Seconds()), 10000), 1000000)
	}
	return []runSpec{
		{name: "bare 1KiB ×64", mode: modeBare, workers: 64, size: 1024},
		{name: "produce 1KiB ×1", mode: modeProduce, workers: 1, size: 1024},
		{name: "produce 1KiB ×16", mode: modeProduce, workers: 16, size: 1024},
		{name: "produce 1KiB ×64", mode: modeProduce, workers: 64, size: 1024},
		{name: "produce 1KiB ×256", mode: modeProduce, workers: 256, size: 1024},
		{name: "batch 100×256B ×16", mode: modeBatch, workers: 16, size: 256, batch: 100},
		{name: "consume-ack 1 ×64", mode: modeConsume, workers: 64, size: 256, batch: 1, prefill: pre},
		{name: "consume-ack 100 ×16", mode: modeConsume, workers: 16, size: 256, batch: 100, prefill: pre},
	}
}

func runAll(ctx context.Context, c config, stdout, stderr io.Writer) int {
	var results []Result
	code := 0
	setupDone := false
	for _, spec := range suite(c) {
		if ctx.Err() != nil {
			break
		}
		if spec.mode != modeBare && !setupDone {
			if err := setup(ctx, c, stderr); err != nil {
				fmt.Fprintln(stderr, "narad-bench:", err)
				code = 1
				break
			}
			setupDone = true
		}
		if !c.json {
			fmt.Fprintf(stderr, "narad-bench: running %s for %v\n", spec.name, c.duration)
		}
		res, err := execute(ctx, c, spec)
		if err != nil {
			fmt.Fprintf(stderr, "narad-bench: %s: %v\n", spec.name, err)
			code = 1
		}
		if failed(&res) {
			code = 1
		}
		if c.json {
			emit(stdout, c, &res)
		}
		results = append(results, res)
	}
	if !c.json && len(results) > 0 {
		writeTable(stdout, results)
	}
	return code
}
