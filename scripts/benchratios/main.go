// Command benchratios runs issue 16's comparisons on this machine, in one run, and prints
// each ratio beside its target (make bench-ratios; docs/benchmarks.md):
//
//   - fdatasync of a 1 KiB write in the data directory's file system, appended and over
//     zeros the file already holds: p50;
//   - a bare net/http handler at 64 clients (narad-bench -mode bare): the ceiling;
//   - one node: produce 1 KiB at 64 clients (msgs/s and daemon CPU per message), at
//     1 client (p50) and at 21 (CPU per message: a third of the load);
//   - three nodes on loopback: produce at 64 clients spread over them (msgs/s, CPU per
//     message), and 202 to consumable at 5,000 msgs/s with 16 consumers (p50, p99);
//   - three new nodes with every client sent to its partition's owner (narad-bench
//     -route owner), as a client that knows the owners does;
//   - three new nodes started with -produce-local-partitions, the clients spread over
//     them: each member keeps the messages it takes on its own partitions;
//   - the floors (floors.go): write, fdatasync and device read-back; a bare handler in a
//     process of its own at 1 and 64 clients; the same 64 clients over three of them.
//
// Daemon CPU is the processes' own user+system time (/proc/PID/stat) over the run.
//
//	go run ./scripts/benchratios -narad bin/narad -bench bin/narad-bench [-duration 10s]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	password = "benchratios-password"
	secret   = "benchratios: a cluster secret of 16 bytes or more"
	clkTck   = 100 // USER_HZ of /proc/PID/stat on Linux
)

type config struct {
	narad, bench string
	duration     time.Duration
	dir          string
}

// result is the part of narad-bench's JSON line read here.
type result struct {
	MsgsPerSec float64 `json:"msgs_per_s"`
	Messages   uint64  `json:"messages"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	Errors     uint64  `json:"errors"`
	Latency    *struct {
		P50Ms float64 `json:"p50_ms"`
		P99Ms float64 `json:"p99_ms"`
		Lost  uint64  `json:"lost"`
	} `json:"latency"`
}

func main() {
	var c config
	flag.StringVar(&c.narad, "narad", "bin/narad", "the narad binary")
	flag.StringVar(&c.bench, "bench", "bin/narad-bench", "the narad-bench binary")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "each load run")
	bareAddr := flag.String("serve-bare", "", "only serve a bare handler at this address (floors.go)")
	flag.Parse()
	if *bareAddr != "" {
		fail(serveBare(*bareAddr))
	}
	dir, err := os.MkdirTemp("", "benchratios-")
	if err != nil {
		fail(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	c.dir = dir
	if err := run(c); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchratios:", err)
	os.Exit(1)
}

type figures struct {
	fsyncP50Ms, bare             float64
	fsyncZerosP50Ms              float64
	one64, one1P50Ms, oneCPUMs   float64
	one21CPUMs                   float64
	oneErrors, threeErrors, lost uint64
	spread, owner, local         clusterFigures
	floor                        floorFigures
}

// clusterFigures are the three nodes' figures under one route.
type clusterFigures struct {
	rate, cpuMs                float64
	consumeP50Ms, consumeP99Ms float64
}

func run(c config) error {
	var f figures
	var err error
	if f.fsyncP50Ms, err = fsyncP50(c.dir, 2000, false); err != nil {
		return err
	}
	if f.fsyncZerosP50Ms, err = fsyncP50(c.dir, 2000, true); err != nil {
		return err
	}
	if err := c.floors(&f.floor); err != nil {
		return err
	}
	bare, err := c.load("", "bare", 64, "")
	if err != nil {
		return err
	}
	f.bare = bare.MsgsPerSec
	if err := c.single(&f); err != nil {
		return err
	}
	if err := c.cluster(&f); err != nil {
		return err
	}
	if err := c.localCluster(&f); err != nil {
		return err
	}
	report(f)
	return nil
}

// single measures one node: 64 clients, then 1, then 21.
func (c config) single(f *figures) error {
	nodes, addrs, r, cpuPerMsg, err := c.startLoaded(1, "spread")
	if err != nil {
		return err
	}
	defer stopAll(nodes)
	f.one64, f.oneCPUMs, f.oneErrors = r.MsgsPerSec, cpuPerMsg, r.Errors
	r1, err := c.load(addrs, "produce", 1, "")
	if err != nil {
		return err
	}
	f.one1P50Ms = r1.P50Ms
	// A third of the clients: what each member of a cluster sees when nothing crosses.
	r21, cpu, err := c.loadCPU(nodes, addrs, "produce", 21)
	f.one21CPUMs, f.oneErrors = cpu/float64(max(r21.Messages, 1)), f.oneErrors+r21.Errors
	return err
}

// cluster measures three nodes: 64 clients, then 202 to consumable, spread over the
// nodes; then three new nodes with every client at its partition's owner (new, so that
// what the spread runs left to dispatch does not run beside them).
func (c config) cluster(f *figures) error {
	if err := c.clusterRoute("spread", &f.spread, f); err != nil {
		return err
	}
	return c.clusterRoute("owner", &f.owner, f)
}

// localCluster measures three nodes that keep keyless messages on their own partitions,
// with the clients spread over them.
func (c config) localCluster(f *figures) error {
	return c.clusterRoute("spread", &f.local, f, "-produce-local-partitions")
}

// clusterRoute starts three nodes with serveArgs and measures them with the clients routed
// as route says (narad-bench -route).
func (c config) clusterRoute(route string, cf *clusterFigures, f *figures, serveArgs ...string) error {
	nodes, addrs, r, cpuPerMsg, err := c.startLoaded(3, route, serveArgs...)
	if err != nil {
		return err
	}
	defer stopAll(nodes)
	cf.rate, cf.cpuMs = r.MsgsPerSec, cpuPerMsg
	f.threeErrors += r.Errors
	return c.consumable(addrs, route, cf, &f.lost)
}

// consumable measures 202 to consumable on its own topic with the route given.
func (c config) consumable(addrs, route string, cf *clusterFigures, lost *uint64) error {
	lat, err := c.load(addrs, "latency", 64, "-topic", "lat-"+route, "-create-topic",
		"-partitions", "6", "-consumers", "16", "-rate", "5000", "-route", route)
	if err != nil {
		return err
	}
	if lat.Latency != nil {
		cf.consumeP50Ms, cf.consumeP99Ms = lat.Latency.P50Ms, lat.Latency.P99Ms
		*lost += lat.Latency.Lost
	}
	return nil
}

// startLoaded starts n nodes, creates the topic (a warm-up of one client), and runs
// produce at 64 clients routed as route says: the result and the daemons' CPU
// milliseconds per message. The caller stops the nodes (on an error they are stopped here).
func (c config) startLoaded(n int, route string, serveArgs ...string) ([]*node, string, result, float64, error) {
	nodes, err := c.start(n, serveArgs...)
	if err != nil {
		return nil, "", result{}, 0, err
	}
	addrs := addrsOf(nodes)
	if _, err := c.load(addrs, "produce", 1, "-create-topic", "-partitions", "6"); err != nil {
		stopAll(nodes)
		return nil, "", result{}, 0, err
	}
	r, cpu, err := c.loadCPU(nodes, addrs, "produce", 64, "-route", route)
	if err != nil {
		stopAll(nodes)
		return nil, "", result{}, 0, err
	}
	return nodes, addrs, r, cpu / float64(max(r.Messages, 1)), nil
}

// load runs narad-bench once and reads its JSON line (the first argument of extra may be
// "" for none).
func (c config) load(addrs, mode string, workers int, extra ...string) (result, error) {
	args := []string{"-mode", mode, "-workers", strconv.Itoa(workers), "-size", "1024",
		"-duration", c.duration.String(), "-json"}
	if mode != "bare" {
		args = append(args, "-addr", addrs)
		if !slices.Contains(extra, "-topic") {
			args = append(args, "-topic", "bench")
		}
	}
	for _, e := range extra {
		if e != "" {
			args = append(args, e)
		}
	}
	cmd := exec.Command(c.bench, args...)
	cmd.Env = append(os.Environ(), "NARAD_PASSWORD="+password)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	var r result
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if line := sc.Bytes(); len(line) > 0 && line[0] == '{' {
			if jerr := json.Unmarshal(line, &r); jerr != nil {
				return r, jerr
			}
		}
	}
	if err != nil {
		return r, fmt.Errorf("narad-bench %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}

// loadCPU runs load and answers the daemons' CPU milliseconds over it.
func (c config) loadCPU(nodes []*node, addrs, mode string, workers int, extra ...string) (result, float64, error) {
	before, err := cpuMs(nodes)
	if err != nil {
		return result{}, 0, err
	}
	r, err := c.load(addrs, mode, workers, extra...)
	if err != nil {
		return r, 0, err
	}
	after, err := cpuMs(nodes)
	return r, after - before, err
}

type node struct {
	cmd  *exec.Cmd
	addr string
}

func addrsOf(nodes []*node) string {
	var as []string
	for _, n := range nodes {
		as = append(as, n.addr)
	}
	return strings.Join(as, ",")
}

// start runs n nodes (a cluster of n with n > 1) on fresh directories, each with
// serveArgs added, and waits until each answers /readyz.
func (c config) start(n int, serveArgs ...string) ([]*node, error) {
	// Clusters with and without serveArgs take other ports; two started one after the
	// other with the same take the same (stopAll waits for the first to exit).
	base := 7300 + 10*n + 5*min(len(serveArgs), 1)
	var peers []string
	for i := 1; i <= n; i++ {
		peers = append(peers, fmt.Sprintf("%d=127.0.0.1:%d", i, base+i))
	}
	command := func(i int, addr string) (*exec.Cmd, error) {
		data, err := os.MkdirTemp(c.dir, fmt.Sprintf("n%d-%d-", n, i)) // each start its own
		if err != nil {
			return nil, err
		}
		args := []string{"serve", "-data", data, "-addr", addr, "-log-level", "warn"}
		args = append(args, serveArgs...)
		if n > 1 {
			args = append(args, "-id", strconv.Itoa(i), "-peers", strings.Join(peers, ","))
		}
		cmd := exec.Command(c.narad, args...)
		cmd.Env = append(os.Environ(), "NARAD_ADMIN_PASSWORD="+password, "NARAD_CLUSTER_SECRET="+secret)
		return cmd, nil
	}
	ready := func(nd *node) error { return awaitReady(nd.addr, 60*time.Second) }
	nodes, err := startEach(base, n, command, ready)
	if err != nil || n == 1 {
		return nodes, err
	}
	// A topic created before every member is marked alive gets no partition on the
	// others, and the rebalance then moves some during the runs.
	if err := awaitAlive(nodes[0].addr, n, 60*time.Second); err != nil {
		stopAll(nodes)
		return nil, err
	}
	return nodes, nil
}

// startEach starts n processes, the i-th (from 1) made by command for the address of
// port base+i, and waits until ready holds of each; on an error none is left running.
func startEach(base, n int, command func(i int, addr string) (*exec.Cmd, error),
	ready func(*node) error) ([]*node, error) {
	var nodes []*node
	for i := 1; i <= n; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", base+i)
		cmd, err := command(i, addr)
		if err == nil {
			cmd.Stderr = os.Stderr
			err = cmd.Start()
		}
		if err != nil {
			stopAll(nodes)
			return nil, err
		}
		nodes = append(nodes, &node{cmd: cmd, addr: addr})
	}
	for _, nd := range nodes {
		if err := ready(nd); err != nil {
			stopAll(nodes)
			return nil, err
		}
	}
	return nodes, nil
}

// awaitAlive waits until the node at addr lists n members alive.
func awaitAlive(addr string, n int, bound time.Duration) error {
	if !pollUntil(bound, func() bool { return aliveMembers(addr) == n }) {
		return fmt.Errorf("%s: %d members not alive within %v", addr, n, bound)
	}
	return nil
}

func aliveMembers(addr string) int {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/cluster/members", nil)
	if err != nil {
		return 0
	}
	req.SetBasicAuth("admin", password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	var list struct {
		Members []struct {
			Status string `json:"status"`
		} `json:"members"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return 0
	}
	alive := 0
	for _, m := range list.Members {
		if m.Status == "alive" {
			alive++
		}
	}
	return alive
}

func awaitReady(addr string, bound time.Duration) error {
	ready := func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !pollUntil(bound, ready) {
		return fmt.Errorf("%s not ready within %v", addr, bound)
	}
	return nil
}

// pollUntil asks cond every 50 ms until it holds, for at most bound.
func pollUntil(bound time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded above
	}
	return false
}

func stopAll(nodes []*node) {
	for _, n := range nodes {
		_ = n.cmd.Process.Signal(os.Interrupt)
	}
	for _, n := range nodes {
		_ = n.cmd.Wait()
	}
}

// cpuMs sums the nodes' user and system time, in milliseconds.
func cpuMs(nodes []*node) (float64, error) {
	var ticks float64
	for _, n := range nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.cmd.Process.Pid))
		if err != nil {
			return 0, err
		}
		// Fields after the command name (which may hold spaces): state is field 3, utime 14.
		rest := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		u, err1 := strconv.ParseFloat(rest[11], 64)
		s, err2 := strconv.ParseFloat(rest[12], 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %q", n.cmd.Process.Pid, b)
		}
		ticks += u + s
	}
	return ticks * 1000 / clkTck, nil
}
