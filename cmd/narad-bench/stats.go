package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"
)

// Histogram is a fixed-size log-linear histogram of durations in nanoseconds: exact below
// 256 ns, then 128 linear sub-buckets per power of two, so a reported percentile is within
// 1/128 (< 0.8 %) of the true value. Values above histMax (about 18 minutes) land in the
// last bucket. Record does no allocation and takes no lock: each worker owns one and the
// runner merges them once the workers have stopped.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64
	min    uint64
	max    uint64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // linear sub-buckets per power of two
	histMaxBits = 40
	histMax     = 1<<histMaxBits - 1
	// the bucket index of histMax is (histMaxBits-histSubBits-1)*histSub + (histMax >> e),
	// whose top is 2*histSub-1.
	histBuckets = (histMaxBits-histSubBits-1)*histSub + 2*histSub
)

func histIndex(v uint64) int {
	if v > histMax {
		v = histMax
	}
	e := bits.Len64(v) - histSubBits - 1
	if e < 0 {
		e = 0
	}
	return e*histSub + int(v>>uint(e))
}

// histBounds gives the smallest and largest value that fall in bucket i.
func histBounds(i int) (lo, hi uint64) {
	e := i>>histSubBits - 1
	if e < 0 {
		e = 0
	}
	m := uint64(i - e*histSub)
	lo = m << uint(e)
	return lo, lo + 1<<uint(e) - 1
}

// Record adds one duration (negative durations count as zero).
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of samples recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest sample, exact.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest sample, exact.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean is the exact mean.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Quantile gives the value at quantile q in [0,1]: the top of the bucket holding the sample
// of rank ceil(q·n), clamped to the exact min and max. Zero when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return time.Duration(h.min)
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			_, hi := histBounds(i)
			hi = min(max(hi, h.min), h.max)
			return time.Duration(hi)
		}
	}
	return time.Duration(h.max)
}

// workerStats is what one worker counts; it is touched by that worker only until the run
// ends, so nothing on the hot path locks.
type workerStats struct {
	hist       Histogram
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

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

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
	var h Histogram
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
	r.P50Ms = ms(h.Quantile(0.50))
	r.P99Ms = ms(h.Quantile(0.99))
	r.MaxMs = ms(h.Max())
	r.MeanMs = ms(h.Mean())
}

func fmtMs(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0fµs", v*1000)
	case v < 1000:
		return fmt.Sprintf("%.2fms", v)
	default:
		return fmt.Sprintf("%.2fs", v/1000)
	}
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
		fmtMs(r.P50Ms), fmtMs(r.P99Ms), fmtMs(r.MaxMs), fmtMs(r.MeanMs), r.LatencyN)
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
		fmtMs(l.P50Ms), fmtMs(l.P99Ms), fmtMs(l.MaxMs), fmtMs(l.MeanMs), l.LatencyN)
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
			fmtMs(r.P50Ms), fmtMs(r.P99Ms), fmtMs(r.MaxMs), r.Errors, statusSummary(r), note)
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
