package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Shape of the crash test's load.
const (
	crashProducers    = 64
	crashPayloadBytes = 1024
	crashPartitions   = 4
	crashLoadBound    = 60 * time.Second // to reach the kill point
	crashDrainBound   = 60 * time.Second // to drain every partition after the restart
)

// TestCrashRecovery runs the real binary: 64 concurrent producers, SIGKILL at a seeded
// random moment, a restart on the same data directory, then a drain of every partition.
// Every payload answered 202 before the kill must be delivered, byte for byte; payloads
// whose produce was cut by the kill may or may not be (and may appear twice: at least
// once); nothing else may appear.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the narad binary")
	}
	bin := buildNarad(t)
	// Three kill points, early to late: the WAL checkpoint is made durable lazily (every
	// 250 ms), so an early kill replays everything and a late one only the tail.
	for _, k := range []struct {
		seed               uint64
		afterMin, afterMax int // the kill comes after a seeded number of 202s in this range
	}{{1, 300, 800}, {2, 800, 2000}, {3, 2000, 4000}} {
		t.Run(fmt.Sprintf("seed=%d", k.seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(k.seed, 0x6e61726164))
			killAfter := k.afterMin + rng.IntN(k.afterMax-k.afterMin)
			killDelay := time.Duration(rng.IntN(20_000)) * time.Microsecond
			crashOnce(t, bin, killAfter, killDelay)
		})
	}
}

// buildNarad builds this command into a temporary directory, with the race detector when
// the tests have it (the build then reuses the test build's compiled packages).
func buildNarad(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build narad: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "narad")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goBin, append(args, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// crashOnce loads a fresh node, kills it killDelay after the killAfter-th 202, restarts
// it, drains it and checks what it delivered.
func crashOnce(t *testing.T, bin string, killAfter int, killDelay time.Duration) {
	t.Logf("SIGKILL %v after the %dth 202", killDelay, killAfter)
	dir := t.TempDir()

	c := startChild(t, bin, dir)
	c.expect(http.StatusCreated, http.MethodPost, "/v1/topics",
		fmt.Sprintf(`{"name":"crash","partitions":%d,"visibility_timeout_ms":600000}`, crashPartitions))
	load := produceUntilKilled(t, c, killAfter, killDelay)
	t.Logf("killed after %d produces answered 202 (%d attempted)", load.ackedTotal(), load.attemptedTotal())

	c = startChild(t, bin, dir)
	delivered := drain(t, c)
	checkDelivered(t, load, delivered)
	if s := c.terminate(); s != 0 {
		t.Fatalf("restarted narad exited with %d after SIGTERM, want 0", s)
	}
}

// crashPayload is producer p's n-th payload: a readable prefix, then letters that depend
// on (p, n), so that a record read back from the wrong place or damaged shows.
func crashPayload(p, n int) []byte {
	b := make([]byte, 0, crashPayloadBytes)
	b = fmt.Appendf(b, "c%02d-%06d-", p, n)
	for i := len(b); i < crashPayloadBytes; i++ {
		b = append(b, byte('a'+(p*7+n*13+i)%26))
	}
	return b
}

// load is what the producers did: per producer, the payloads answered 202 and how many
// were sent at all.
type load struct {
	acked     [crashProducers][]int
	attempted [crashProducers]int
	unusual   [crashProducers][]string // statuses other than 202 and 429 before the kill
}

func (l *load) ackedTotal() (n int) {
	for _, a := range l.acked {
		n += len(a)
	}
	return n
}

func (l *load) attemptedTotal() (n int) {
	for _, a := range l.attempted {
		n += a
	}
	return n
}

// produceUntilKilled runs the producers until the killAfter-th 202, waits killDelay, kills
// the process with SIGKILL and returns what the producers saw.
func produceUntilKilled(t *testing.T, c *child, killAfter int, killDelay time.Duration) *load {
	l := &load{}
	var acked atomic.Int64
	reached := make(chan struct{})
	var killed atomic.Bool
	var wg sync.WaitGroup
	for p := range crashProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !killed.Load(); n++ {
				l.attempted[p] = n + 1
				resp, err := postAuth(c.client, c.base+"/v1/topics/crash/produce", "application/octet-stream", bytes.NewReader(crashPayload(p, n)))
				if err != nil {
					return // the process is gone
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusAccepted:
					l.acked[p] = append(l.acked[p], n)
					if acked.Add(1) == int64(killAfter) {
						close(reached)
					}
				case http.StatusTooManyRequests: // backpressure: not stored, go on
				default:
					if !killed.Load() {
						l.unusual[p] = append(l.unusual[p], fmt.Sprintf("%d: %s", n, resp.Status))
					}
				}
			}
		}()
	}
	select {
	case <-reached:
	case <-time.After(crashLoadBound):
		killed.Store(true)
		c.kill()
		wg.Wait()
		t.Fatalf("only %d produces answered 202 within %v", acked.Load(), crashLoadBound)
	}
	<-time.After(killDelay) // the kill point: a seeded moment while the load goes on
	c.kill()
	killed.Store(true)
	wg.Wait()
	c.client.CloseIdleConnections()
	for p, u := range l.unusual {
		if len(u) > 0 {
			t.Errorf("producer %d got answers other than 202 before the kill: %q", p, u)
		}
	}
	return l
}

// drain consumes every partition (max=100) and acks what it gets, until the dispatcher has
// nothing left to commit and consumes find nothing, twice in a row. It returns how often
// each payload was delivered.
func drain(t *testing.T, c *child) map[string]int {
	delivered := map[string]int{}
	records := 0
	deadline := time.Now().Add(crashDrainBound)
	for quiet := 0; quiet < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("still draining after %v (%d records so far)", crashDrainBound, records)
		}
		backlog := c.backlog()
		r := c.do(http.MethodGet, "/v1/topics/crash/consume?max=100&wait=200ms", "")
		if r.status == http.StatusNoContent {
			if backlog == 0 {
				quiet++
			}
			continue
		}
		quiet = 0
		if r.status != http.StatusOK {
			t.Fatalf("consume: %v", r)
		}
		var page struct {
			Messages []messageJSON `json:"messages"`
		}
		mustDecode(t, r.body, &page)
		handles := make([]string, len(page.Messages))
		for i, m := range page.Messages {
			delivered[m.text(t)]++
			handles[i] = m.ReceiptHandle
		}
		records += len(page.Messages)
		body, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
		ar := c.expect(http.StatusOK, http.MethodPost, "/v1/topics/crash/ack", string(body))
		if want := strings.Repeat(`{"status":204},`, len(handles)); string(ar.body) != `{"results":[`+strings.TrimSuffix(want, ",")+`]}` {
			t.Fatalf("batch ack: %s", ar.body)
		}
	}
	// Every record the partitions hold was delivered once: acks were at once and the
	// visibility timeout is 10 minutes, so nothing was delivered twice.
	var tp topicJSON
	mustDecode(t, c.expect(http.StatusOK, http.MethodGet, "/v1/topics/crash", "").body, &tp)
	var held uint64
	for _, ps := range tp.PartitionStats {
		held += ps.HighWatermark
	}
	if held != uint64(records) {
		t.Errorf("the partitions hold %d records, the drain delivered %d", held, records)
	}
	return delivered
}

// checkDelivered: every payload answered 202 was delivered; every payload delivered was
// sent, byte for byte.
func checkDelivered(t *testing.T, l *load, delivered map[string]int) {
	missing := 0
	for p := range crashProducers {
		for _, n := range l.acked[p] {
			if delivered[string(crashPayload(p, n))] == 0 {
				if missing++; missing <= 10 {
					t.Errorf("lost: producer %d payload %d was answered 202 and never delivered", p, n)
				}
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d payloads answered 202 were lost", missing, l.ackedTotal())
	}
	duplicates, unacked := 0, 0
	for payload, count := range delivered {
		var p, n int
		if _, err := fmt.Sscanf(payload, "c%02d-%06d-", &p, &n); err != nil || p < 0 || p >= crashProducers ||
			n < 0 || n >= l.attempted[p] || payload != string(crashPayload(p, n)) {
			t.Errorf("delivered a payload that was never sent: %.40q… (%d bytes)", payload, len(payload))
			continue
		}
		duplicates += count - 1
		if !contains(l.acked[p], n) {
			unacked++
		}
	}
	t.Logf("delivered %d distinct payloads: %d answered 202, %d cut by the kill, %d duplicates",
		len(delivered), len(delivered)-unacked, unacked, duplicates)
}

func contains(ns []int, n int) bool {
	for _, m := range ns { // ns is sorted: its producer sent in order
		if m >= n {
			return m == n
		}
	}
	return false
}

// child is `narad serve` in a child process.
type child struct {
	t      *testing.T
	name   string // prefixes its log lines
	cmd    *exec.Cmd
	base   string
	client *http.Client
	logged chan struct{} // closed once stderr is read to its end
	exited bool
	// authorization, when set, is the Authorization header of every request (as); else
	// the root user's credentials are sent.
	authorization string
}

// as is c sending user's credentials.
func (c *child) as(user, password string) *child {
	cp := *c
	cp.authorization = basicOf(user, password)
	return &cp
}

// startChild starts the binary on dir and a port the kernel chooses, and waits until it
// answers /readyz 200.
func startChild(t *testing.T, bin, dir string) *child {
	t.Helper()
	c := spawnChild(t, bin, "narad", "-data", dir, "-addr", "127.0.0.1:0", "-log-level", "info")
	c.waitReady()
	return c
}

// spawnChild starts `narad serve args…` and waits until it listens. Its log lines go to
// the test log, prefixed with name.
func spawnChild(t *testing.T, bin, name string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "NARAD_PRODUCE_INFLIGHT_MAX=0", "NARAD_ADMIN_PASSWORD="+testAdminPassword)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	c := &child{t: t, name: name, cmd: cmd, logged: make(chan struct{}),
		client: &http.Client{Timeout: 30 * time.Second, // validated: openapi_test.go
			Transport: validating(t, &http.Transport{MaxIdleConnsPerHost: crashProducers}, true)}}
	t.Cleanup(c.kill)
	addr := make(chan string, 1)
	go func() {
		defer close(c.logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			t.Log(name + ": " + line)
			if _, rest, ok := strings.Cut(line, " msg=listening addr="); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		c.base = "http://" + a
	case <-c.logged:
		c.kill()
		t.Fatalf("%s exited before listening", name)
	case <-time.After(startBound):
		c.kill()
		t.Fatalf("%s did not listen within %v", name, startBound)
	}
	return c
}

// waitReady waits until the child answers /readyz 200.
func (c *child) waitReady() {
	c.t.Helper()
	eventually(c.t, startBound, c.name+": /readyz answers 200", func() bool {
		r, err := c.try(http.MethodGet, "/readyz", "")
		return err == nil && r.status == http.StatusOK
	})
}

// kill sends SIGKILL and reaps the process. Idempotent.
func (c *child) kill() {
	if c.exited {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.logged
	_ = c.cmd.Wait()
	c.exited = true
	c.client.CloseIdleConnections()
}

// terminate sends SIGTERM and returns the exit status.
func (c *child) terminate() int {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	c.client.CloseIdleConnections()
	select {
	case <-c.logged:
	case <-time.After(exitBound):
		c.kill()
		c.t.Fatalf("narad did not exit within %v of SIGTERM", exitBound)
	}
	err := c.cmd.Wait()
	c.exited = true
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		c.t.Fatal(err)
	}
	return 0
}

func (c *child) do(method, path, body string) reply {
	c.t.Helper()
	r, err := c.try(method, path, body)
	if err != nil {
		c.t.Fatalf("%s: %s %s: %v", c.name, method, path, err)
	}
	return r
}

// try is do that returns a transport error rather than failing the test.
func (c *child) try(method, path, body string) (reply, error) {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.authorization != "" {
		req.Header.Set("Authorization", c.authorization)
	}
	withCredentials(req)
	resp, err := c.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func (c *child) expect(status int, method, path, body string) reply {
	c.t.Helper()
	r := c.do(method, path, body)
	if r.status != status {
		c.t.Fatalf("%s %s: %v, want %d", method, path, r, status)
	}
	return r
}

// backlog reads narad_dispatcher_backlog_records: WAL records not yet committed to their
// partitions.
func (c *child) backlog() float64 {
	c.t.Helper()
	return metricValue(c.t, string(c.expect(http.StatusOK, http.MethodGet, "/metrics", "").body), "narad_dispatcher_backlog_records")
}
