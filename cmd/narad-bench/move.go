package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/benchstat"
)

// The move mode (issue 14's figures): against a cluster (-addr with two nodes or more),
// it fills partition 0 of -topic with -move-mib MiB of -size byte messages, then runs
// -workers producers of single -size byte messages pinned to the other partitions twice:
// for -duration without a move (the baseline), then while partition 0 moves to another
// member (POST /v1/cluster/moves), until the move is done. It reports the move's copy
// throughput (the destination's narad_move_copied_bytes_total over the move's time), its
// freeze (the destination's narad_move_freeze_seconds), and produce p50/p99 on the other
// partitions in both runs.

// movePollEvery is how often the move's progress is asked (GET /v1/cluster/moves).
const movePollEvery = 20 * time.Millisecond

// moveFillBatch is the messages of one fill request (the API takes 1,000 at most).
const moveFillBatch = 1000

type moveRun struct {
	c      config
	client *http.Client
	base   string // the first node's base URL
}

func runMove(ctx context.Context, c config, stdout, stderr io.Writer) int {
	if len(c.addrs) < 2 || c.partitions < 2 {
		fmt.Fprintln(stderr, "narad-bench: -mode move needs a cluster (-addr with 2 nodes or more) and -partitions 2 or more")
		return 2
	}
	r := &moveRun{c: c, client: newClient(c.workers + 4), base: "http://" + c.addrs[0]}
	if _, err := createTopic(ctx, r.client, newTarget(c.addrs[0], c.topic), c.partitions); err != nil {
		fmt.Fprintln(stderr, "narad-bench:", err)
		return 1
	}
	filled, err := r.fill(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "narad-bench: fill:", err)
		return 1
	}
	base := r.load(ctx, nil)
	mv, err := r.move(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "narad-bench: move:", err)
		return 1
	}
	fmt.Fprintf(stdout, "| run | produce p50 | produce p99 | produces | errors |\n| --- | ---: | ---: | ---: | ---: |\n")
	fmt.Fprintf(stdout, "| no move, %v | %s | %s | %d | %d |\n", c.duration, base.p50(), base.p99(), base.n, base.errs)
	fmt.Fprintf(stdout, "| during the move (%.1f s) | %s | %s | %d | %d |\n\n", mv.took.Seconds(), mv.load.p50(),
		mv.load.p99(), mv.load.n, mv.load.errs)
	mib := float64(mv.copied) / (1 << 20)
	fmt.Fprintf(stdout, "move of %.0f MiB (%d messages of %d bytes) from member %d to %d: %.1f MiB copied in %.2f s "+
		"(%.1f MiB/s), frozen %.1f ms\n", float64(filled)*float64(c.size)/(1<<20), filled, c.size, mv.from, mv.to, mib,
		mv.took.Seconds(), mib/mv.took.Seconds(), mv.freeze.Seconds()*1000)
	return 0
}

// fill produces -move-mib MiB into partition 0 and waits until they are consumable there.
func (r *moveRun) fill(ctx context.Context) (int, error) {
	n := int(int64(r.c.moveMiB) << 20 / int64(r.c.size))
	item := `{"payload":"` + base64.StdEncoding.EncodeToString(makePayload(r.c.size)) +
		`","payload_encoding":"base64","partition":0}`
	body := []byte(`{"messages":[` + strings.TrimSuffix(strings.Repeat(item+",", moveFillBatch), ",") + `]}`)
	var next, sent atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(moveFillBatch) <= int64(n)+moveFillBatch-1 {
				status, rb, err := setupPost(ctx, r.client, "http://"+r.c.addrs[i%len(r.c.addrs)]+
					"/v1/topics/"+r.c.topic+"/produce/batch", "application/json", body)
				for err == nil && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
					if err = sleepCtx(ctx, 50*time.Millisecond); err == nil { // backpressure: again
						status, rb, err = setupPost(ctx, r.client, "http://"+r.c.addrs[i%len(r.c.addrs)]+
							"/v1/topics/"+r.c.topic+"/produce/batch", "application/json", body)
					}
				}
				if err != nil || status != http.StatusAccepted && status != http.StatusOK {
					errs <- fmt.Errorf("batch produce: %d %s %v", status, oneLine(string(rb), 200), err)
					return
				}
				sent.Add(moveFillBatch)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return int(sent.Load()), r.waitHW(ctx, uint64(sent.Load()))
}

// waitHW waits until partition 0's high-watermark is at least hw.
func (r *moveRun) waitHW(ctx context.Context, hw uint64) error {
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); {
		var t struct {
			Stats []struct {
				Index uint32 `json:"index"`
				HW    uint64 `json:"high_watermark"`
			} `json:"partition_stats"`
		}
		if err := r.getJSON(ctx, r.base+"/v1/topics/"+r.c.topic, &t); err == nil {
			for _, s := range t.Stats {
				if s.Index == 0 && s.HW >= hw {
					return nil
				}
			}
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("partition 0 did not reach %d records", hw)
}

// sleepCtx paces a poll: it waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *moveRun) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	setCredentials(req)
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// loadStats are one load run's produce latencies.
type loadStats struct {
	h    benchstat.Histogram
	n    int
	errs int
}

func (s *loadStats) p50() string { return benchstat.FmtMs(benchstat.Ms(s.h.Quantile(0.5))) }
func (s *loadStats) p99() string { return benchstat.FmtMs(benchstat.Ms(s.h.Quantile(0.99))) }

// load runs the producers on partitions 1.. until done is closed (nil: for -duration).
func (r *moveRun) load(ctx context.Context, done <-chan struct{}) *loadStats {
	if done == nil {
		ch := make(chan struct{})
		time.AfterFunc(r.c.duration, func() { close(ch) })
		done = ch
	}
	payload := makePayload(r.c.size)
	all := make([]loadStats, r.c.workers)
	var wg sync.WaitGroup
	for w := range r.c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.produceUntil(ctx, done, w, payload, &all[w])
		}()
	}
	wg.Wait()
	out := &loadStats{}
	for i := range all {
		out.h.Merge(&all[i].h)
		out.n += all[i].n
		out.errs += all[i].errs
	}
	return out
}

func (r *moveRun) produceUntil(ctx context.Context, done <-chan struct{}, w int, payload []byte, st *loadStats) {
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		p := 1 + (w+i)%(r.c.partitions-1)
		u := "http://" + r.c.addrs[(w+i)%len(r.c.addrs)] + "/v1/topics/" + r.c.topic + "/produce?partition=" + strconv.Itoa(p)
		start := time.Now()
		status, _, err := setupPost(ctx, r.client, u, "application/octet-stream", payload)
		if err != nil || status != http.StatusAccepted {
			st.errs++
			continue
		}
		st.h.Record(time.Since(start))
		st.n++
	}
}

// moveResult is what the move run measured.
type moveResult struct {
	from, to uint64
	took     time.Duration
	freeze   time.Duration
	copied   float64
	load     *loadStats
}

type memberAddr struct {
	ID   uint64 `json:"id"`
	Addr string `json:"addr"`
}

// move moves partition 0 to another member under the producers' load and measures it.
func (r *moveRun) move(ctx context.Context) (moveResult, error) {
	var ms struct {
		Members []memberAddr `json:"members"`
	}
	if err := r.getJSON(ctx, r.base+"/v1/cluster/members", &ms); err != nil {
		return moveResult{}, err
	}
	before := map[uint64][3]float64{}
	for _, m := range ms.Members {
		before[m.ID] = r.moveMetrics(ctx, m.Addr)
	}
	done := make(chan struct{})
	loadDone := make(chan *loadStats, 1)
	go func() { loadDone <- r.load(ctx, done) }()
	start := time.Now()
	res, err := r.startAndWait(ctx, ms.Members)
	res.took = time.Since(start)
	close(done)
	res.load = <-loadDone
	if err != nil {
		return res, err
	}
	for _, m := range ms.Members {
		if m.ID == res.to {
			after := r.moveMetrics(ctx, m.Addr)
			b := before[m.ID]
			res.copied = after[0] - b[0]
			if n := after[2] - b[2]; n > 0 {
				res.freeze = time.Duration((after[1] - b[1]) / n * 1e9)
			}
		}
	}
	return res, nil
}

// startAndWait asks for the move to the first member that is not the owner, then polls
// until it is done.
func (r *moveRun) startAndWait(ctx context.Context, ms []memberAddr) (moveResult, error) {
	var res moveResult
	for _, m := range ms {
		body := fmt.Sprintf(`{"topic":%q,"partition":0,"to":%d}`, r.c.topic, m.ID)
		status, rb, err := setupPost(ctx, r.client, r.base+"/v1/cluster/moves", "application/json", []byte(body))
		if err == nil && status == http.StatusAccepted {
			res.to = m.ID
			break
		}
		if err != nil || status != http.StatusConflict && status != http.StatusBadRequest { // (the owner: 400)
			return res, fmt.Errorf("POST /v1/cluster/moves: %d %s %v", status, oneLine(string(rb), 200), err)
		}
	}
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); {
		var mv struct {
			Moves []struct {
				Topic     string `json:"topic"`
				Partition uint32 `json:"partition"`
				From      uint64 `json:"from"`
			} `json:"moves"`
		}
		if err := r.getJSON(ctx, r.base+"/v1/cluster/moves", &mv); err == nil {
			moving := false
			for _, m := range mv.Moves {
				if m.Topic == r.c.topic && m.Partition == 0 {
					moving, res.from = true, m.From
				}
			}
			if !moving {
				return res, nil
			}
		}
		if err := sleepCtx(ctx, movePollEvery); err != nil {
			return res, err
		}
	}
	return res, fmt.Errorf("the move did not end")
}

// moveMetrics scrapes a node's copied bytes, freeze seconds sum and freeze count.
func (r *moveRun) moveMetrics(ctx context.Context, addr string) [3]float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return [3]float64{}
	}
	setCredentials(req)
	resp, err := r.client.Do(req)
	if err != nil {
		return [3]float64{}
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	var out [3]float64
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(val, 64)
		switch name {
		case "narad_move_copied_bytes_total":
			out[0] = v
		case "narad_move_freeze_seconds_sum":
			out[1] = v
		case "narad_move_freeze_seconds_count":
			out[2] = v
		}
	}
	return out
}
