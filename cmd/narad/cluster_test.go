package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Shape of the cluster test.
const (
	clusterNodes        = 3
	clusterProducers    = 16
	clusterPartitions   = 6
	clusterPayloadBytes = 512
	clusterBeforeKill   = 1000 // 202s before one node is killed
	clusterAfterKill    = 1000 // 202s from the two others before it restarts
	clusterFormBound    = 60 * time.Second
	clusterLoadBound    = 60 * time.Second // for each load phase
	// clusterDrainBound is longer than the dispatcher's remote commit timeout (30 s): a
	// commit sent to the killed node is lost and sent again only after it.
	clusterDrainBound = 90 * time.Second
	clusterSecret     = "the cluster test's shared secret"
)

// member is one node of the test cluster: a `narad serve` child on its own data directory
// and its own port (HTTP on TCP, QUIC on UDP).
type member struct {
	id   uint64
	addr string
	dir  string
	c    *child
	down atomic.Bool // killed: the producers leave it alone
}

// TestClusterKillAndRestart runs three `narad serve` processes as a cluster on loopback:
// they form (3 live members on every node), a topic of 6 partitions is created on the
// metastore leader, 16 producers send through all three nodes, a node that does not lead
// is killed with SIGKILL mid-load, the load goes on to the two others until the leader
// has marked the killed node dead, the killed node restarts on its data directory, and
// consumers drain every node. Every payload answered 202 must be delivered, byte for
// byte; duplicates are counted and logged.
func TestClusterKillAndRestart(t *testing.T) {
	began := time.Now()
	bin, ms := clusterUnderTest(t)
	t.Logf("cluster formed after %v", time.Since(began).Round(time.Millisecond))
	leader := createClusterTopic(t, ms)

	l := startClusterLoad(ms)
	defer l.stop()
	l.waitAcked(t, clusterBeforeKill)
	victim := ms[(leader+1)%clusterNodes]
	victim.down.Store(true)
	victim.c.kill()
	killedAt := l.total.Load()
	t.Logf("killed node %d (node %d leads) after %d produces answered 202", victim.id, ms[leader].id, killedAt)
	l.waitAcked(t, killedAt+clusterAfterKill)
	waitMarkedDead(t, ms[leader], victim) // its partitions' records may reroute from here on
	t.Logf("node %d marked dead; %d produces answered 202", victim.id, l.total.Load())
	restartMember(t, bin, ms, victim)
	victim.down.Store(false)
	l.stop()
	t.Logf("restarted node %d; %d produces answered 202 of %d attempted (%v in)",
		victim.id, l.total.Load(), l.attemptedTotal(), time.Since(began).Round(time.Millisecond))
	l.checkUnusual(t)

	drained := time.Now()
	delivered := drainCluster(t, ms, l)
	t.Logf("drained in %v", time.Since(drained).Round(time.Millisecond))
	checkClusterDelivered(t, l, delivered)
	for _, m := range ms {
		if s := m.c.terminate(); s != 0 {
			t.Errorf("node %d exited with %d after SIGTERM, want 0", m.id, s)
		}
	}
	t.Logf("whole test: %v", time.Since(began).Round(time.Millisecond))
}

// startCluster starts the members on free loopback ports, all told of each other, and
// waits until every node lists 3 live members.
func startCluster(t *testing.T, bin string) []*member {
	addrs := freeAddrs(t, clusterNodes)
	ms := make([]*member, clusterNodes)
	for i := range ms {
		ms[i] = &member{id: uint64(i + 1), addr: addrs[i], dir: t.TempDir()}
	}
	for _, m := range ms {
		m.c = spawnMember(t, bin, ms, m)
	}
	for _, m := range ms {
		m.c.waitReady()
	}
	for _, m := range ms {
		eventually(t, clusterFormBound, fmt.Sprintf("node %d lists %d live members", m.id, clusterNodes), func() bool {
			ls, err := listMembers(m)
			return err == nil && ls.alive() == clusterNodes
		})
	}
	return ms
}

// freeAddrs finds n loopback ports free for both TCP and UDP, each held until all are
// found so that no two are the same.
func freeAddrs(t *testing.T, n int) []string {
	var addrs []string
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for tries := 0; len(addrs) < n; tries++ {
		if tries > 100 {
			t.Fatalf("no %d loopback ports free for TCP and UDP", n)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err != nil {
			continue // the UDP port is taken: try another
		}
		held = append(held, pc)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

// spawnMember starts m's process (without waiting for it to be ready: a node is ready only
// once a quorum of the metastore is up).
func spawnMember(t *testing.T, bin string, ms []*member, m *member) *child {
	var peers []string
	for _, o := range ms {
		peers = append(peers, fmt.Sprintf("%d=%s", o.id, o.addr))
	}
	return spawnChild(t, bin, fmt.Sprintf("node %d", m.id), "-data", m.dir, "-addr", m.addr, "-log-level", "info",
		"-id", strconv.FormatUint(m.id, 10), "-peers", strings.Join(peers, ","))
}

// waitMarkedDead waits until by lists m as a dead member.
func waitMarkedDead(t *testing.T, by, m *member) {
	eventually(t, clusterFormBound, fmt.Sprintf("node %d lists node %d dead", by.id, m.id), func() bool {
		ls, err := listMembers(by)
		for _, o := range ls.Members {
			if o.ID == m.id {
				return err == nil && o.Status == "dead"
			}
		}
		return false
	})
}

func restartMember(t *testing.T, bin string, ms []*member, m *member) {
	m.c = spawnMember(t, bin, ms, m)
	m.c.waitReady()
	eventually(t, clusterFormBound, fmt.Sprintf("node %d lists %d live members after its restart", m.id, clusterNodes), func() bool {
		ls, err := listMembers(m)
		return err == nil && ls.alive() == clusterNodes
	})
}

// membersJSON is GET /v1/cluster/members.
type membersJSON struct {
	Members []struct {
		ID       uint64 `json:"id"`
		Addr     string `json:"addr"`
		Status   string `json:"status"`
		Leader   bool   `json:"leader"`
		Voter    bool   `json:"voter"`
		Owned    int    `json:"owned_partitions"`
		Draining bool   `json:"draining"`
		MovesIn  int    `json:"moves_in"`
		MovesOut int    `json:"moves_out"`
	} `json:"members"`
}

func (ls membersJSON) alive() (n int) {
	for _, m := range ls.Members {
		if m.Status == "alive" {
			n++
		}
	}
	return n
}

func listMembers(m *member) (membersJSON, error) {
	var ls membersJSON
	r, err := m.c.try(http.MethodGet, "/v1/cluster/members", "")
	if err == nil && r.status != http.StatusOK {
		err = fmt.Errorf("members: %v", r)
	}
	if err == nil {
		err = strictDecode(r.body, &ls)
	}
	return ls, err
}

// createClusterTopic creates the topic on the metastore leader (a follower answers 503)
// and waits until every node knows it. It returns the leader's index.
func createClusterTopic(t *testing.T, ms []*member) int {
	return createClusterTopicWith(t, ms, 600_000)
}

// createClusterTopicWith is createClusterTopic with leases of visibilityMs.
func createClusterTopicWith(t *testing.T, ms []*member, visibilityMs int) int {
	leader := -1
	body := fmt.Sprintf(`{"name":"cluster","partitions":%d,"visibility_timeout_ms":%d}`, clusterPartitions,
		visibilityMs)
	eventually(t, clusterFormBound, "the topic is created on the metastore leader", func() bool {
		ls, err := listMembers(ms[0])
		for _, m := range ls.Members {
			if m.Leader && err == nil {
				leader = int(m.ID) - 1
			}
		}
		if leader < 0 {
			return false
		}
		r, err := ms[leader].c.try(http.MethodPost, "/v1/topics", body)
		return err == nil && (r.status == http.StatusCreated || r.status == http.StatusConflict)
	})
	for _, m := range ms {
		eventually(t, clusterFormBound, fmt.Sprintf("node %d knows the topic", m.id), func() bool {
			r, err := m.c.try(http.MethodGet, "/v1/topics", "")
			return err == nil && r.status == http.StatusOK && bytes.Contains(r.body, []byte(`"name":"cluster"`))
		})
	}
	ls, _ := listMembers(ms[leader])
	t.Logf("topic created on node %d; members: %+v", leader+1, ls.Members)
	return leader
}

// clusterPayload is producer p's n-th payload: a readable prefix, then letters that
// depend on (p, n).
func clusterPayload(p, n int) []byte {
	b := make([]byte, 0, clusterPayloadBytes)
	b = fmt.Appendf(b, "k%02d-%06d-", p, n)
	for i := len(b); i < clusterPayloadBytes; i++ {
		b = append(b, byte('a'+(p*11+n*17+i)%26))
	}
	return b
}

// clusterLoad is the producers and what they saw: per producer, the payloads answered
// 202, how many were sent, and answers that should not happen.
type clusterLoad struct {
	ms        []*member
	client    *http.Client
	stopped   atomic.Bool
	wg        sync.WaitGroup
	total     atomic.Int64 // 202s
	acked     [clusterProducers][]sentTo
	attempted [clusterProducers]int
	unusual   [clusterProducers][]string
}

// sentTo is a payload answered 202: its number and the node that answered.
type sentTo struct {
	n    int
	node uint64
}

// startClusterLoad starts the producers. Producer p sends its n-th payload to the
// (p+n)-th node that is up, so each node gets every producer's traffic.
func startClusterLoad(ms []*member) *clusterLoad {
	l := &clusterLoad{ms: ms, client: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: clusterProducers}}}
	for p := range clusterProducers {
		l.wg.Add(1)
		go l.produce(p)
	}
	return l
}

func (l *clusterLoad) produce(p int) {
	defer l.wg.Done()
	for n := 0; !l.stopped.Load(); n++ {
		m := l.pick(p + n)
		l.attempted[p] = n + 1
		resp, err := postAuth(l.client, m.c.base+"/v1/topics/cluster/produce", "application/octet-stream", bytes.NewReader(clusterPayload(p, n)))
		if err != nil {
			if !m.down.Load() {
				l.unusual[p] = append(l.unusual[p], fmt.Sprintf("%d to node %d: %v", n, m.id, err))
			}
			continue // cut by the kill: may or may not be stored
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusAccepted:
			l.acked[p] = append(l.acked[p], sentTo{n: n, node: m.id})
			l.total.Add(1)
		case resp.StatusCode == http.StatusTooManyRequests: // backpressure: not stored
		case !m.down.Load():
			l.unusual[p] = append(l.unusual[p], fmt.Sprintf("%d to node %d: %s", n, m.id, resp.Status))
		}
	}
}

// pick is the i-th node that is up, round-robin.
func (l *clusterLoad) pick(i int) *member {
	up := make([]*member, 0, len(l.ms))
	for _, m := range l.ms {
		if !m.down.Load() {
			up = append(up, m)
		}
	}
	return up[i%len(up)]
}

// waitAcked waits until n produces in all were answered 202.
func (l *clusterLoad) waitAcked(t *testing.T, n int64) {
	t.Helper()
	eventually(t, clusterLoadBound, fmt.Sprintf("%d produces answered 202 (%d so far)", n, l.total.Load()), func() bool {
		return l.total.Load() >= n
	})
}

// stop stops the producers and waits for them. Idempotent.
func (l *clusterLoad) stop() {
	l.stopped.Store(true)
	l.wg.Wait()
	l.client.CloseIdleConnections()
}

func (l *clusterLoad) attemptedTotal() (n int) {
	for _, a := range l.attempted {
		n += a
	}
	return n
}

func (l *clusterLoad) checkUnusual(t *testing.T) {
	for p, u := range l.unusual {
		if len(u) > 0 {
			t.Errorf("producer %d got answers other than 202 and 429 from live nodes: %q", p, u[:min(len(u), 5)])
		}
	}
}

// drainCluster consumes from every node (max=100) and acks what it gets, until every
// payload answered 202 was delivered and then a round finds nothing on any node while no
// node has a dispatcher backlog, twice in a row. It returns how often each payload was
// delivered.
func drainCluster(t *testing.T, ms []*member, l *clusterLoad) map[string]int {
	delivered := map[string]int{}
	deadline := time.Now().Add(clusterDrainBound)
	for quiet := 0; quiet < 2; {
		if time.Now().After(deadline) {
			reportUndrained(t, ms, l, delivered)
			t.Fatalf("still draining after %v", clusterDrainBound)
		}
		got := 0
		for _, m := range ms {
			got += drainOnce(t, m, delivered)
		}
		switch {
		case got > 0 || len(l.missing(delivered)) > 0:
			quiet = 0
		case clusterBacklog(t, ms) == 0:
			quiet++
		}
	}
	return delivered
}

// clusterUnderTest builds narad and starts a cluster of clusterNodes processes for a
// black-box test (skipped with -short); it returns the binary, for restarts.
func clusterUnderTest(t *testing.T) (bin string, ms []*member) {
	if testing.Short() {
		t.Skip("builds and runs three narad processes")
	}
	bin = buildNarad(t)
	t.Setenv("NARAD_CLUSTER_SECRET", clusterSecret) // the children inherit it
	return bin, startCluster(t, bin)
}

// drainOnce takes up to 100 leases on m and settles them; it returns how many it got.
func drainOnce(t *testing.T, m *member, delivered map[string]int) int {
	return drainNoting(t, m, delivered, nil)
}

// drainNoting is drainOnce that also hands every message it got to note, if not nil.
func drainNoting(t *testing.T, m *member, delivered map[string]int, note func(text string, msg messageJSON)) int {
	r := m.c.do(http.MethodGet, "/v1/topics/cluster/consume?max=100&wait=200ms", "")
	if r.status == http.StatusNoContent || r.status == http.StatusServiceUnavailable {
		return 0 // nothing now, or no metastore leader for a moment (an election after a restart): the callers retry within their bounds
	}
	if r.status != http.StatusOK {
		t.Fatalf("consume on node %d: %v", m.id, r)
	}
	var page struct {
		Messages []messageJSON `json:"messages"`
	}
	mustDecode(t, r.body, &page)
	handles := make([]string, len(page.Messages))
	for i, msg := range page.Messages {
		text := msg.text(t)
		delivered[text]++
		if note != nil {
			note(text, msg)
		}
		handles[i] = msg.ReceiptHandle
	}
	body, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
	ar := m.c.expect(http.StatusOK, http.MethodPost, "/v1/topics/cluster/ack", string(body))
	if want := strings.Repeat(`{"status":204},`, len(handles)); string(ar.body) != `{"results":[`+strings.TrimSuffix(want, ",")+`]}` {
		t.Fatalf("batch ack on node %d: %s", m.id, ar.body)
	}
	return len(page.Messages)
}

func clusterBacklog(t *testing.T, ms []*member) (n float64) {
	for _, m := range ms {
		n += m.c.backlog()
	}
	return n
}

// missing lists the payloads answered 202 that were not delivered (yet), as "p/n@node".
func (l *clusterLoad) missing(delivered map[string]int) []string {
	var out []string
	for p := range clusterProducers {
		for _, a := range l.acked[p] {
			if delivered[string(clusterPayload(p, a.n))] == 0 {
				out = append(out, fmt.Sprintf("%d/%d@node%d", p, a.n, a.node))
			}
		}
	}
	return out
}

// reportUndrained logs what a drain that did not finish leaves: the payloads missing
// (producer/number@the node that answered 202), and every node's members, backlog, peer
// message counts and partition stats.
func reportUndrained(t *testing.T, ms []*member, l *clusterLoad, delivered map[string]int) {
	miss := l.missing(delivered)
	t.Errorf("%d payloads answered 202 never delivered; the first: %q", len(miss), miss[:min(len(miss), 30)])
	for _, m := range ms {
		ls, err := listMembers(m)
		t.Logf("node %d: members %+v %v", m.id, ls.Members, err)
		if r, err := m.c.try(http.MethodGet, "/metrics", ""); err == nil {
			for _, line := range strings.Split(string(r.body), "\n") {
				if strings.HasPrefix(line, "narad_dispatcher_backlog") || strings.HasPrefix(line, "narad_peer_messages_total") {
					t.Logf("node %d: %s", m.id, line)
				}
			}
		}
		if r, err := m.c.try(http.MethodGet, "/v1/topics/cluster", ""); err == nil {
			t.Logf("node %d: topic %s", m.id, r.body)
		}
	}
}

// checkClusterDelivered: every payload answered 202 was delivered; every payload
// delivered was sent, byte for byte. Duplicates are counted, not failures.
func checkClusterDelivered(t *testing.T, l *clusterLoad, delivered map[string]int) {
	if miss := l.missing(delivered); len(miss) > 0 {
		t.Errorf("%d of %d payloads answered 202 were lost; the first: %q", len(miss), l.total.Load(), miss[:min(len(miss), 30)])
	}
	duplicates, unacked := 0, 0
	for payload, count := range delivered {
		var p, n int
		if _, err := fmt.Sscanf(payload, "k%02d-%06d-", &p, &n); err != nil || p < 0 || p >= clusterProducers ||
			n < 0 || n >= l.attempted[p] || payload != string(clusterPayload(p, n)) {
			t.Errorf("delivered a payload that was never sent: %.40q… (%d bytes)", payload, len(payload))
			continue
		}
		duplicates += count - 1
		if !ackedHas(l.acked[p], n) {
			unacked++
		}
	}
	t.Logf("delivered %d distinct payloads: %d answered 202, %d cut by the kill, %d duplicates",
		len(delivered), len(delivered)-unacked, unacked, duplicates)
}

func ackedHas(as []sentTo, n int) bool {
	for _, a := range as { // as is sorted: its producer sent in order
		if a.n >= n {
			return a.n == n
		}
	}
	return false
}
