package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/client"
	"github.com/narad/narad/internal/benchstat"
)

// Bounds of narad bench.
const (
	benchWorkersMax   = 4096
	benchDurationMax  = time.Hour
	benchProgressTick = time.Second
)

// benchFlags are the flags of bench.
type benchFlags struct {
	duration   time.Duration
	messages   int64
	workers    int
	size       int
	batch      int
	create     bool
	partitions uint32
}

// benchRun is one run: what the workers count, shared (atomics) for the progress line and
// per worker (histograms) for the summary.
type benchRun struct {
	f        benchFlags
	topic    string
	c        *client.Client
	payload  []byte
	messages atomic.Int64 // accepted
	claimed  atomic.Int64 // messages handed to the workers, against --messages
	requests atomic.Int64
	errs     atomic.Int64
	mu       sync.Mutex
	statuses map[string]int64
	first    map[string]string
}

// benchSummary is the run's outcome (what --output json prints).
type benchSummary struct {
	Topic      string            `json:"topic"`
	Workers    int               `json:"workers"`
	Size       int               `json:"size"`
	Batch      int               `json:"batch"`
	Nodes      int               `json:"nodes"`
	DurationS  float64           `json:"duration_s"`
	Messages   int64             `json:"messages"`
	Requests   int64             `json:"requests"`
	MsgsPerSec float64           `json:"msgs_per_s"`
	P50Ms      float64           `json:"p50_ms"`
	P99Ms      float64           `json:"p99_ms"`
	MaxMs      float64           `json:"max_ms"`
	MeanMs     float64           `json:"mean_ms"`
	Errors     int64             `json:"errors"`
	Statuses   map[string]int64  `json:"statuses,omitempty"`
	First      map[string]string `json:"first_errors,omitempty"`
}

func (x *cli) benchCommand() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench TOPIC",
		Short: "Produce to TOPIC as fast as the workers can; a progress line on a terminal, a summary at the end",
		Long: "Each worker produces messages of --size bytes (batches of --batch when more than 1) to\n" +
			"TOPIC, over the nodes of --url, until --duration passes or --messages were sent. On a\n" +
			"terminal a progress line shows the rate every second; the summary gives messages/s, the\n" +
			"per-request latency (p50, p99, max) and the errors by status. Exit status 1 when a request\n" +
			"failed.",
		Args: cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to produce")
	fs.Int64Var(&f.messages, "messages", 0, "stop once this many messages were sent (0: at --duration)")
	fs.IntVar(&f.workers, "workers", 16, "concurrent producers")
	fs.IntVar(&f.size, "size", 1024, "message size in bytes")
	fs.IntVar(&f.batch, "batch", 1, "messages per request (1: single produce; up to 1000: batch produce)")
	fs.BoolVar(&f.create, "create", false, "create the topic first (an existing one is fine)")
	fs.Uint32Var(&f.partitions, "partitions", 3, "partitions of a topic --create makes")
	cmd.RunE = x.run(func(ctx context.Context, args []string) error {
		if err := f.check(); err != nil {
			return err
		}
		if f.create {
			_, err := x.c.CreateTopic(ctx, client.TopicConfig{Name: args[0], Partitions: &f.partitions})
			if err != nil && !errors.Is(err, client.ErrConflict) {
				return err
			}
		}
		r := &benchRun{f: f, topic: args[0], c: x.c, payload: benchPayload(f.size),
			statuses: map[string]int64{}, first: map[string]string{}}
		s := r.run(ctx, x)
		if err := x.printBench(s); err != nil {
			return err
		}
		if s.Errors > 0 {
			return fmt.Errorf("%d requests failed", s.Errors)
		}
		return nil
	})
	return cmd
}

func (f benchFlags) check() error {
	switch {
	case f.workers < 1 || f.workers > benchWorkersMax:
		return usagef("--workers %d: want 1 to %d", f.workers, benchWorkersMax)
	case f.size < 1 || f.size > client.MessageBytesMax:
		return usagef("--size %d: want 1 to %d", f.size, client.MessageBytesMax)
	case f.batch < 1 || f.batch > client.BatchMax || f.batch*f.size > client.BatchBytesMax/2:
		return usagef("--batch %d: want 1 to %d, and batch×size at most %d", f.batch, client.BatchMax,
			client.BatchBytesMax/2)
	case f.duration <= 0 || f.duration > benchDurationMax:
		return usagef("--duration %v: want more than 0, at most %v", f.duration, benchDurationMax)
	case f.messages < 0:
		return usagef("--messages %d: want 0 or more", f.messages)
	}
	return nil
}

// benchPayload is size bytes of readable text.
func benchPayload(size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

// run drives the workers and the progress line and returns the summary.
func (r *benchRun) run(ctx context.Context, x *cli) benchSummary {
	ctx, cancel := context.WithTimeout(ctx, r.f.duration)
	defer cancel()
	began := time.Now()
	hists := make([]benchstat.Histogram, r.f.workers)
	var wg sync.WaitGroup
	for w := range r.f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(ctx, &hists[w])
		}()
	}
	progressDone := make(chan struct{})
	if x.env.terminal && x.output != "json" {
		go r.progress(ctx, x, began, progressDone)
	} else {
		close(progressDone)
	}
	wg.Wait()
	cancel()
	<-progressDone
	var h benchstat.Histogram
	for i := range hists {
		h.Merge(&hists[i])
	}
	return r.summary(time.Since(began), &h)
}

// work produces until ctx ends or the messages are claimed.
func (r *benchRun) work(ctx context.Context, h *benchstat.Histogram) {
	batch := make([]client.BatchMessage, r.f.batch)
	for i := range batch {
		batch[i].Payload = r.payload
	}
	for ctx.Err() == nil {
		n := int64(r.f.batch)
		if r.f.messages > 0 {
			first := r.claimed.Add(n) - n // this request's messages are first..first+n-1
			if first >= r.f.messages {
				return
			}
			n = min(n, r.f.messages-first)
		}
		start := time.Now()
		var err error
		if r.f.batch == 1 {
			err = r.c.Produce(ctx, r.topic, r.payload)
		} else {
			_, err = r.c.ProduceBatch(ctx, r.topic, batch[:n])
		}
		if ctx.Err() != nil {
			return // cut by the end of the run: neither counted nor an error
		}
		r.requests.Add(1)
		if err != nil {
			r.fail(err)
			continue
		}
		h.Record(time.Since(start))
		r.messages.Add(n)
	}
}

// fail counts an error by its status ("transport" when no node answered).
func (r *benchRun) fail(err error) {
	r.errs.Add(1)
	key := "transport"
	if s := client.StatusOf(err); s != 0 {
		key = strconv.Itoa(s)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses[key]++
	if _, ok := r.first[key]; !ok {
		r.first[key] = err.Error()
	}
}

// progress redraws one line each second until ctx ends, then ends the line.
func (r *benchRun) progress(ctx context.Context, x *cli, began time.Time, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(benchProgressTick)
	defer tick.Stop()
	last, lastAt := int64(0), began
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(x.env.stdout)
			return
		case now := <-tick.C:
			n := r.messages.Load()
			rate := float64(n-last) / now.Sub(lastAt).Seconds()
			last, lastAt = n, now
			fmt.Fprintf(x.env.stdout, "\r%6.1fs  %d messages  %.0f msg/s  %d errors   ",
				now.Sub(began).Seconds(), n, rate, r.errs.Load())
		}
	}
}

func (r *benchRun) summary(elapsed time.Duration, h *benchstat.Histogram) benchSummary {
	s := benchSummary{Topic: r.topic, Workers: r.f.workers, Size: r.f.size, Batch: r.f.batch,
		Nodes: len(r.c.Nodes()), DurationS: round(elapsed.Seconds(), 3), Messages: r.messages.Load(),
		Requests: r.requests.Load(), Errors: r.errs.Load(), P50Ms: benchstat.Ms(h.Quantile(0.5)),
		P99Ms: benchstat.Ms(h.Quantile(0.99)), MaxMs: benchstat.Ms(h.Max()), MeanMs: benchstat.Ms(h.Mean())}
	s.MsgsPerSec = round(float64(s.Messages)/elapsed.Seconds(), 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.statuses) > 0 {
		s.Statuses, s.First = r.statuses, r.first
	}
	return s
}

func round(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}

// printBench prints the summary: a JSON line, or a few lines for a human.
func (x *cli) printBench(s benchSummary) error {
	if x.output == "json" {
		return x.jsonLine(s)
	}
	w := x.env.stdout
	fmt.Fprintf(w, "bench %s: %d workers, %d-byte messages, batch %d, %d node(s), %.1fs\n",
		s.Topic, s.Workers, s.Size, s.Batch, s.Nodes, s.DurationS)
	fmt.Fprintf(w, "messages  %d accepted, %.1f/s (%d requests)\n", s.Messages, s.MsgsPerSec, s.Requests)
	fmt.Fprintf(w, "latency   p50 %s  p99 %s  max %s  mean %s (per request)\n",
		benchstat.FmtMs(s.P50Ms), benchstat.FmtMs(s.P99Ms), benchstat.FmtMs(s.MaxMs), benchstat.FmtMs(s.MeanMs))
	fmt.Fprintf(w, "errors    %d\n", s.Errors)
	keys := make([]string, 0, len(s.Statuses))
	for k := range s.Statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		label := k
		if n, err := strconv.Atoi(k); err == nil {
			label = k + " " + http.StatusText(n)
		}
		fmt.Fprintf(w, "  %s ×%d, first: %s\n", label, s.Statuses[k], s.First[k])
	}
	return nil
}
