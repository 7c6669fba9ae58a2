package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/narad/narad/internal/benchstat"
)

// workerStats is what one worker counts; it is touched by that worker only until the run
// ends, so nothing on the hot path locks.
type workerStats struct {
	hist       benchstat.Histogram
	msgs       uint64 // messages accepted (produce) or acknowledged (consume-ack)
	reqs       uint64 // HTTP requests that got a response
	empty      uint64 // consume polls answered 204
	errs       uint64 // everything counted in codes
	codes      map[string]uint64
	first      map[string]firstErr
	missing    string // a route the server does not serve, when one was detected
	buf        bytes.Buffer
	timer      *time.Timer
	prevBody   *trackedBody
	ackBuf     []byte
	ackResults ackResults
}

type firstErr struct {
	at   time.Time
	body string
}

// fail counts one unexpected outcome under key and keeps the first body seen for it.
func (ws *workerStats) fail(key, body string) {
	if ws.codes == nil {
		ws.codes = make(map[string]uint64)
		ws.first = make(map[string]firstErr)
	}
	ws.errs++
	ws.codes[key]++
	if _, ok := ws.first[key]; !ok {
		ws.first[key] = firstErr{at: time.Now(), body: strings.TrimSpace(body)}
	}
}

// Result is the report of one run.
type Result struct {
	Name         string            `json:"name"`
	Mode         string            `json:"mode"`
	Workers      int               `json:"workers"`
	Size         int               `json:"size"`
	Nodes        int               `json:"nodes,omitempty"` // addresses driven, when more than one
	Batch        int               `json:"batch"`
	DurationS    float64           `json:"duration_s"`
	Prefilled    int               `json:"prefilled,omitempty"`
	Messages     uint64            `json:"messages"`
	Requests     uint64            `json:"requests"`
	EmptyPolls   uint64            `json:"empty_polls,omitempty"`
	MsgsPerSec   float64           `json:"msgs_per_s"`
	ReqsPerSec   float64           `json:"reqs_per_s"`
	LatencyN     uint64            `json:"latency_n"`
	P50Ms        float64           `json:"p50_ms"`
	P99Ms        float64           `json:"p99_ms"`
	MaxMs        float64           `json:"max_ms"`
	MeanMs       float64           `json:"mean_ms"`
	Errors       uint64            `json:"errors"`
	Statuses     map[string]uint64 `json:"statuses,omitempty"`
	FirstErrors  map[string]string `json:"first_errors,omitempty"`
	MissingRoute string            `json:"missing_route,omitempty"`
	Note         string            `json:"note,omitempty"`
	Latency      *LatencyStats     `json:"latency,omitempty"`
}

func (r *Result) addNote(s string) {
	if r.Note != "" {
		r.Note += "; "
	}
	r.Note += s
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// mergeErrors adds the failures of src (the latency mode's consumers) to dst, their
// statuses prefixed "consumer ".
func mergeErrors(dst, src *Result) {
	dst.Errors += src.Errors
	for k, c := range src.Statuses {
		if dst.Statuses == nil {
			dst.Statuses = map[string]uint64{}
		}
		dst.Statuses["consumer "+k] += c
	}
	for k, b := range src.FirstErrors {
		if dst.FirstErrors == nil {
			dst.FirstErrors = map[string]string{}
		}
		dst.FirstErrors["consumer "+k] = b
	}
	if src.MissingRoute != "" {
		dst.MissingRoute = strings.TrimPrefix(dst.MissingRoute+"; "+src.MissingRoute, "; ")
	}
}

// mergeStats folds the workers' counts into r.
func mergeStats(r *Result, all []*workerStats, elapsed time.Duration) {
	var h benchstat.Histogram
	first := map[string]firstErr{}
	for _, ws := range all {
		h.Merge(&ws.hist)
		r.Messages += ws.msgs
		r.Requests += ws.reqs
		r.EmptyPolls += ws.empty
		r.Errors += ws.errs
		for k, c := range ws.codes {
			if r.Statuses == nil {
				r.Statuses = map[string]uint64{}
			}
			r.Statuses[k] += c
			if f, ok := first[k]; !ok || ws.first[k].at.Before(f.at) {
				first[k] = ws.first[k]
			}
		}
		if ws.missing != "" && !strings.Contains(r.MissingRoute, ws.missing) {
			r.MissingRoute = strings.TrimPrefix(r.MissingRoute+"; "+ws.missing, "; ")
		}
	}
	for k, f := range first {
		if r.FirstErrors == nil {
			r.FirstErrors = map[string]string{}
		}
		r.FirstErrors[k] = f.body
	}
	r.DurationS = round3(elapsed.Seconds())
	if s := elapsed.Seconds(); s > 0 {
		r.MsgsPerSec = round1(float64(r.Messages) / s)
		r.ReqsPerSec = round1(float64(r.Requests) / s)
	}
	r.LatencyN = h.Count()
	r.P50Ms = benchstat.Ms(h.Quantile(0.50))
	r.P99Ms = benchstat.Ms(h.Quantile(0.99))
	r.MaxMs = benchstat.Ms(h.Max())
	r.MeanMs = benchstat.Ms(h.Mean())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// statusSummary is "429×12, transport×1", sorted by key.
func statusSummary(r *Result) string {
	if len(r.Statuses) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(r.Statuses) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, r.Statuses[k]))
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// batched reports whether requests and messages differ for this run's mode.
func (r *Result) batched() bool {
	return r.Mode == modeBatch || r.Mode == modeConsume
}

// writeText prints one run for a human.
func writeText(w io.Writer, r *Result) {
	fmt.Fprintf(w, "%s: mode=%s workers=%d size=%d", r.Name, r.Mode, r.Workers, r.Size)
	if r.batched() {
		fmt.Fprintf(w, " batch=%d", r.Batch)
	}
	if r.Nodes > 1 {
		fmt.Fprintf(w, " nodes=%d", r.Nodes)
	}
	fmt.Fprintf(w, " duration=%.2fs\n", r.DurationS)
	if r.Prefilled > 0 {
		fmt.Fprintf(w, "  prefilled  %d messages\n", r.Prefilled)
	}
	fmt.Fprintf(w, "  messages   %d  (%.1f msg/s)\n", r.Messages, r.MsgsPerSec)
	if r.batched() {
		fmt.Fprintf(w, "  requests   %d  (%.1f req/s)", r.Requests, r.ReqsPerSec)
		if r.EmptyPolls > 0 {
			fmt.Fprintf(w, ", %d empty polls (204)", r.EmptyPolls)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  latency    p50 %s  p99 %s  max %s  mean %s  (per request, n=%d)\n",
		benchstat.FmtMs(r.P50Ms), benchstat.FmtMs(r.P99Ms), benchstat.FmtMs(r.MaxMs), benchstat.FmtMs(r.MeanMs), r.LatencyN)
	fmt.Fprintf(w, "  errors     %d\n", r.Errors)
	for _, k := range sortedKeys(r.Statuses) {
		fmt.Fprintf(w, "    %-12s ×%d  first: %s\n", k, r.Statuses[k], oneLine(r.FirstErrors[k], 300))
	}
	if r.Latency != nil {
		writeLatency(w, r.Latency)
	}
	if r.MissingRoute != "" {
		fmt.Fprintf(w, "  ROUTE NOT SERVED: %s\n", r.MissingRoute)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", r.Note)
	}
}

// writeLatency prints the latency mode's own figures.
func writeLatency(w io.Writer, l *LatencyStats) {
	rate := "unlimited"
	if l.RatePerSec > 0 {
		rate = fmt.Sprintf("%g msg/s", l.RatePerSec)
	}
	fmt.Fprintf(w, "  load       %d producers at %s, %d consumers (%d consume/ack requests, %d empty polls)\n",
		l.Producers, rate, l.Consumers, l.ConsumeReqs, l.EmptyPolls)
	fmt.Fprintf(w, "  202→consumable  p50 %s  p99 %s  max %s  mean %s  (n=%d)\n",
		benchstat.FmtMs(l.P50Ms), benchstat.FmtMs(l.P99Ms), benchstat.FmtMs(l.MaxMs), benchstat.FmtMs(l.MeanMs), l.LatencyN)
	fmt.Fprintf(w, "  delivery   %d answered 202, %d received, %d LOST, %d duplicates, %d received without a 202, %d received before their 202 was read, %d foreign\n",
		l.Produced, l.Received, l.Lost, l.Duplicates, l.Unanswered, l.Early, l.Foreign)
	drained := "all received"
	if l.DrainTimedOut {
		drained = "gave up"
	}
	fmt.Fprintf(w, "  consumers  %.1f msg/s while producing; %d not yet received when producing stopped; %s after %.3fs more\n",
		l.ReceivedPerS, l.Backlog, drained, l.DrainS)
}

// writeTable prints the suite as a Markdown table followed by the first error bodies.
func writeTable(w io.Writer, rs []Result) {
	fmt.Fprintln(w, "| run | mode | workers | msg size | batch | msgs/s | reqs/s | p50 | p99 | max | errors | non-2xx | notes |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|")
	for i := range rs {
		r := &rs[i]
		batch, reqs := "-", "-"
		if r.batched() {
			batch = fmt.Sprint(r.Batch)
			reqs = fmt.Sprintf("%.0f", r.ReqsPerSec)
		}
		var notes []string
		if r.Prefilled > 0 {
			notes = append(notes, fmt.Sprintf("prefilled %d", r.Prefilled))
		}
		if r.MissingRoute != "" {
			notes = append(notes, "route not served: "+r.MissingRoute)
		}
		if r.Note != "" {
			notes = append(notes, r.Note)
		}
		note := strings.ReplaceAll(strings.Join(notes, "; "), "|", "\\|")
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %.0f | %s | %s | %s | %s | %d | %s | %s |\n",
			r.Name, r.Mode, r.Workers, r.Size, batch, r.MsgsPerSec, reqs,
			benchstat.FmtMs(r.P50Ms), benchstat.FmtMs(r.P99Ms), benchstat.FmtMs(r.MaxMs), r.Errors, statusSummary(r), note)
	}
	sep := "\nFirst error body per run and status:\n"
	for i := range rs {
		r := &rs[i]
		for _, k := range sortedKeys(r.FirstErrors) {
			fmt.Fprintf(w, "%s- %s, %s: %s\n", sep, r.Name, k, oneLine(r.FirstErrors[k], 300))
			sep = ""
		}
	}
}
