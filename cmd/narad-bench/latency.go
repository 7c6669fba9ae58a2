package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/benchstat"
)

// produceAnswerMax bounds how long a produce sent before the end of the produce phase may
// wait for its answer: such a produce is never cancelled by the phase's end, so that its
// message is either answered 202 or counted as an error, never left undecided.
const produceAnswerMax = 30 * time.Second

// LatencyStats is the latency mode's own report (see the package doc).
type LatencyStats struct {
	Producers  int     `json:"producers"`
	Consumers  int     `json:"consumers"`
	RatePerSec float64 `json:"rate_per_s"` // the target; 0 = unlimited
	Produced   uint64  `json:"produced"`   // produces answered 202
	Received   uint64  `json:"received"`   // of those, received by a consumer
	Lost       uint64  `json:"lost"`       // answered 202 and not received within the drain
	Duplicates uint64  `json:"duplicates"` // receipts after a message's first
	Unanswered uint64  `json:"unanswered"` // received, but their produce got no 202
	Early      uint64  `json:"early"`      // received before their 202 was read (counted as 0)
	Foreign    uint64  `json:"foreign"`    // payloads without this run's mark
	// Backlog is how many 202-acknowledged messages were not yet received when producing
	// stopped; DrainS how long the consumers then took to receive the rest (or gave up).
	Backlog       int64   `json:"backlog"`
	DrainS        float64 `json:"drain_s"`
	DrainTimedOut bool    `json:"drain_timed_out,omitempty"`
	ReceivedPerS  float64 `json:"received_per_s"` // during the produce phase
	ConsumeReqs   uint64  `json:"consume_requests"`
	EmptyPolls    uint64  `json:"empty_polls"`
	IDsExhausted  bool    `json:"ids_exhausted,omitempty"`
	// 202 → first receipt of every received message
	LatencyN uint64  `json:"latency_n"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	MeanMs   float64 `json:"mean_ms"`
}

// latencyRun is one latency run's shared state.
type latencyRun struct {
	b       *bench
	tr      *tracker
	rate    float64
	start   time.Time
	stopAt  time.Time     // no produce is sent after it
	slots   atomic.Uint64 // the next rate slot
	payload []byte        // the padding every message starts from
}

// slotOffset is when rate slot k is due, after the start: slots are spread evenly at rate
// per second over all producers, so a producer that fell behind catches up at once.
func slotOffset(k uint64, rate float64) time.Duration {
	return time.Duration(float64(k) * float64(time.Second) / rate)
}

// executeLatency runs the latency mode (see the package doc) and fills res.
// With -route owner, targets are pinned to partitions on their owners (owners.go).
func executeLatency(ctx context.Context, c config, spec runSpec, targets []*target, res Result) Result {
	client := newClient(spec.workers + spec.consumers)
	defer client.CloseIdleConnections()
	var runID [4]byte
	rand.Read(runID[:])
	start := time.Now()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l := &latencyRun{
		b:       &bench{client: client, spec: spec, cancel: cancel},
		tr:      newTracker(start, binary.BigEndian.Uint32(runID[:])),
		rate:    spec.rate,
		start:   start,
		stopAt:  start.Add(c.duration),
		payload: makePayload(spec.size),
	}
	producers, consumers := newStats(spec.workers), newStats(spec.consumers)
	cctx, stopConsumers := context.WithCancel(rctx)
	defer stopConsumers()
	var cwg sync.WaitGroup
	for i, ws := range consumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			l.consume(cctx, rctx, ws, targets[i%len(targets)], spec.batch)
		}()
	}
	exhausted := l.runProducers(rctx, producers, targets)
	elapsed := time.Since(start)
	backlog := l.tr.accepted.Load() - l.tr.matched.Load()
	receivedPerS := float64(l.tr.matched.Load()) / elapsed.Seconds()
	drainStart := time.Now()
	timedOut := l.awaitDrain(rctx, c.drain)
	drainTook := time.Since(drainStart)
	stopConsumers()
	cwg.Wait()

	mergeStats(&res, producers, elapsed)
	var cres Result
	mergeStats(&cres, consumers, elapsed)
	mergeErrors(&res, &cres)
	st := l.latencyStats(spec, cres)
	st.Backlog, st.DrainS, st.DrainTimedOut = backlog, round3(drainTook.Seconds()), timedOut
	st.ReceivedPerS, st.IDsExhausted = round1(receivedPerS), exhausted
	res.Latency = st
	addRunNotes(ctx, c, &res)
	if exhausted {
		res.addNote(fmt.Sprintf("stopped producing after %d messages (the run's limit)", trackIDsMax))
	}
	if st.Lost > 0 {
		res.addNote(fmt.Sprintf("%d messages answered 202 were not received within %v after producing stopped", st.Lost, drainTook.Round(time.Millisecond)))
	}
	return res
}

// runProducers runs the producers until the produce phase ends and every produce sent has
// its answer; true when the run's ids ran out.
func (l *latencyRun) runProducers(ctx context.Context, stats []*workerStats, targets []*target) bool {
	pctx, cancel := context.WithDeadline(ctx, l.stopAt.Add(produceAnswerMax))
	defer cancel()
	var exhausted atomic.Bool
	var wg sync.WaitGroup
	for i, ws := range stats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !l.produce(pctx, ws, targets[i%len(targets)]) {
				exhausted.Store(true)
			}
		}()
	}
	wg.Wait()
	return exhausted.Load()
}

// awaitDrain waits until every 202-acknowledged message was received, at most drain; true
// when it gave up.
func (l *latencyRun) awaitDrain(ctx context.Context, drain time.Duration) bool {
	l.tr.expect(l.tr.accepted.Load())
	timer := time.NewTimer(drain)
	defer timer.Stop()
	select {
	case <-l.tr.done():
		return false
	case <-ctx.Done():
		return true
	case <-timer.C:
		return true
	}
}

func (l *latencyRun) latencyStats(spec runSpec, cres Result) *LatencyStats {
	s := l.tr.summarize()
	return &LatencyStats{
		Producers: spec.workers, Consumers: spec.consumers, RatePerSec: spec.rate,
		Produced: s.accepted, Received: s.received, Lost: s.lost, Duplicates: s.duplicates,
		Unanswered: s.unanswered, Early: s.early, Foreign: s.foreign,
		ConsumeReqs: cres.Requests, EmptyPolls: cres.EmptyPolls,
		LatencyN: s.latency.Count(),
		P50Ms:    benchstat.Ms(s.latency.Quantile(0.50)), P99Ms: benchstat.Ms(s.latency.Quantile(0.99)),
		MaxMs: benchstat.Ms(s.latency.Max()), MeanMs: benchstat.Ms(s.latency.Mean()),
	}
}

// wait holds a producer until its next rate slot; false when no slot is left before the
// end of the produce phase, or the run ended.
func (l *latencyRun) wait(ctx context.Context, ws *workerStats) bool {
	if l.rate <= 0 {
		return time.Now().Before(l.stopAt)
	}
	due := l.start.Add(slotOffset(l.slots.Add(1)-1, l.rate))
	if !due.Before(l.stopAt) {
		return false
	}
	if d := time.Until(due); d > 0 {
		ws.wait(ctx, d)
	}
	return ctx.Err() == nil
}

// produce sends marked messages until the produce phase ends; false when ids ran out.
// ctx is not bounded by the phase, so a produce sent before its end gets its answer.
func (l *latencyRun) produce(ctx context.Context, ws *workerStats, t *target) bool {
	route := "/v1/topics/" + t.topicEsc + "/produce"
	tmpl := template(ctx, http.MethodPost, t.produce, "application/octet-stream")
	tmpl.ContentLength = int64(len(l.payload))
	for ctx.Err() == nil && l.wait(ctx, ws) {
		id, ok := l.tr.issue()
		if !ok {
			return false
		}
		p := make([]byte, len(l.payload))
		copy(p, l.payload)
		putMark(p, l.tr.run, id)
		req := new(http.Request)
		*req = *tmpl
		req.Body = newReaderBody(p)
		req.GetBody = func() (io.ReadCloser, error) { return newReaderBody(p), nil }
		start := time.Now()
		resp, err := l.b.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return true
			}
			ws.transportErr(ctx, err)
			continue
		}
		at := time.Now()
		ws.reqs++
		if resp.StatusCode != http.StatusAccepted {
			l.b.unexpected(ws, resp, http.MethodPost, route)
			ws.hist.Record(at.Sub(start))
			continue
		}
		drain(resp)
		l.tr.accept(id, at)
		ws.hist.Record(at.Sub(start))
		ws.msgs++
	}
	return true
}

// latencyMessage is the part of a consumed message the latency mode reads.
type latencyMessage struct {
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	ReceiptHandle   string          `json:"receipt_handle"`
}

// consume long-polls for up to batch messages at a time, records each receipt and
// batch-acks what it got, until ctx ends. Acks are bound by actx only, so that the
// messages of the last poll are settled too.
func (l *latencyRun) consume(ctx, actx context.Context, ws *workerStats, t *target, batch int) {
	consumeRoute := "/v1/topics/" + t.topicEsc + "/consume"
	ackRoute := "/v1/topics/" + t.topicEsc + "/ack"
	u := t.consume + "?wait=" + consumeWait + "&max=" + strconv.Itoa(batch)
	if t.pin != "" {
		u += "&" + t.pin
	}
	ctmpl := template(ctx, http.MethodGet, u, "")
	btmpl := template(actx, http.MethodPost, t.ack, "application/json")
	var page struct {
		Messages []latencyMessage `json:"messages"`
	}
	handles := make([]string, 0, batch)
	for ctx.Err() == nil {
		body, ok, done := l.b.poll(ctx, ws, ctmpl, consumeRoute)
		if done {
			return
		}
		if !ok {
			continue
		}
		at := time.Now()
		clear(page.Messages[:cap(page.Messages)])
		page.Messages = page.Messages[:0]
		if err := json.Unmarshal(body, &page); err != nil {
			ws.fail("bad 200 body", oneLine(string(body), errBodyLimit))
			continue
		}
		handles = handles[:0]
		for _, m := range page.Messages {
			l.tr.receive(m.Payload, m.PayloadEncoding, at)
			if m.ReceiptHandle == "" {
				ws.fail("no receipt_handle", oneLine(string(body), errBodyLimit))
				continue
			}
			handles = append(handles, m.ReceiptHandle)
		}
		if !l.b.ackBatch(actx, ws, btmpl, ackRoute, handles) {
			return
		}
	}
}
