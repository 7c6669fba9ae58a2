package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Shape of the restart stall test.
const (
	stallProducers = 8
	// stallRounds: kill and restart rounds; the stall needs node 1 up before node 3's
	// next dial reaches it, which most rounds but not all give.
	stallRounds = 2
	// stallPhaseSpan separates the payload numbers of each load.
	stallPhaseSpan = 100_000
	// stallBeforeKill: produces answered 202 by node 1 before it is killed, mid-load.
	stallBeforeKill = 2000
	// stallAfterRestart: produces answered 202 by node 1 once it is ready again.
	stallAfterRestart = 2000
	// stallFailedSends: sends node 3 failed (no connection) before the others restart.
	stallFailedSends = 20
	// stallBound: every record answered 202 must be consumable this long after the
	// restarted nodes were started again, well under the dispatcher's 30 s commit
	// timeout: a commit whose send failed fails at once and is sent again after the 1 s
	// backoff (or rerouted after three).
	stallBound = 10 * time.Second
	// stallTimeout is the dispatcher's commit timeout: the stall this test exists to catch.
	stallTimeout = 30 * time.Second
)

// TestRestartedPairCommitsWithoutStall is the chaos run's 31 s stall: two nodes of three
// are killed together, mid-load, and restarted; node 1 had taken produces for the
// partitions of node 3, which stayed up, and takes more once it is ready again. At its
// restart node 1's dispatcher sends the records its WAL still holds (those after its
// durable checkpoint) to node 3 at once, before node 3 has redialed it (the higher id
// dials): its transport fails those sends, and unless the dispatcher is told, each such
// commit holds its partition for the commit timeout (30 s) plus the backoff, with every
// record produced behind it. Every record answered 202 must be consumable within
// stallBound of the restart.
func TestRestartedPairCommitsWithoutStall(t *testing.T) {
	bin, ms := clusterUnderTest(t)
	createClusterTopic(t, ms)
	parts := ownedBy(t, ms[2], ms[2].id)
	if len(parts) == 0 {
		t.Fatalf("node %d owns no partition", ms[2].id)
	}
	for round := range stallRounds {
		stallRound(t, bin, ms, parts, round)
	}
}

// stallRound kills nodes 1 and 2 under load to node 1, restarts them, loads node 1 again,
// and requires every record consumable within stallBound of the restart.
func stallRound(t *testing.T, bin string, ms []*member, parts []int, round int) {
	stayed := ms[2]
	l := startPinnedLoad(ms[0], parts, 2*round)
	eventually(t, clusterLoadBound, fmt.Sprintf("%d produces answered 202", stallBeforeKill), func() bool {
		return l.count() >= stallBeforeKill
	})
	for _, m := range ms[:2] {
		m.c.kill()
	}
	sent := l.stop()
	// Until node 3's connections to the killed nodes time out (io/peernet's idle timeout, 10
	// s), it would redial a restarted node at once (its next packet draws a stateless
	// reset); after, it redials on its backoff, with QUIC's handshake retransmissions
	// backing off inside each dial, which leaves node 1 restarted without a connection to
	// node 3 for up to seconds: the chaos run's case (in most rounds, not all).
	failed := failedSends(stayed)
	eventually(t, clusterFormBound, "node 3 fails its sends to the killed nodes", func() bool {
		return failedSends(stayed) >= failed+stallFailedSends
	})
	restarted := time.Now()
	for _, m := range ms[:2] {
		m.c = spawnMember(t, bin, ms, m)
	}
	for _, m := range ms[:2] {
		m.c.waitReady()
	}
	loadStart := time.Now()
	l = startPinnedLoad(ms[0], parts, 2*round+1)
	eventually(t, clusterLoadBound, fmt.Sprintf("%d produces answered 202 after the restart", stallAfterRestart), func() bool {
		return l.count() >= stallAfterRestart
	})
	after := l.stop()
	// The bound runs from the restart, plus the time this test spent producing its second
	// load (under the race detector on a busy machine, seconds; CI at 4c64a30 spent the
	// whole 10 s there and failed before looking): what it must tell apart is the commit
	// timeout's 30 s stall.
	loading := time.Since(loadStart)
	if stallBound+loading >= stallTimeout {
		t.Fatalf("round %d: the second load took %v: too slow to tell a stall from the %v commit timeout", round, loading, stallTimeout)
	}
	t.Logf("round %d: node 1 answered %d produces 202 for node %d's partitions %v before the kill, %d after its restart",
		round, len(sent), stayed.id, parts, len(after))
	sent = append(sent, after...)
	delivered := map[string]int{}
	deadline := restarted.Add(stallBound + loading)
	for {
		drainOnce(t, stayed, delivered)
		missing := 0
		for _, p := range sent {
			if delivered[p] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: %d of %d records answered 202 by node 1 were not consumable %v after it restarted (%v of it producing)",
				round, missing, len(sent), stallBound+loading, loading)
		}
	}
	t.Logf("round %d: every record consumable %v after the restart", round, time.Since(restarted).Round(time.Millisecond))
}

// pinnedLoad is producers sending to one node, pinned to some partitions in turn.
type pinnedLoad struct {
	mu      sync.Mutex
	sent    []string // payloads answered 202
	stopped atomic.Bool
	wg      sync.WaitGroup
}

// startPinnedLoad starts the producers; phase keeps each load's payloads apart.
func startPinnedLoad(m *member, parts []int, phase int) *pinnedLoad {
	l := &pinnedLoad{}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: stallProducers}}
	for w := range stallProducers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; !l.stopped.Load(); n++ {
				p := parts[n%len(parts)]
				payload := string(clusterPayload(w, phase*stallPhaseSpan+n))
				resp, err := postAuth(client, fmt.Sprintf("%s/v1/topics/cluster/produce?partition=%d", m.c.base, p),
					"application/octet-stream", strings.NewReader(payload))
				if err != nil {
					continue // the kill: may or may not be stored
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					l.mu.Lock()
					l.sent = append(l.sent, payload)
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

func (l *pinnedLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent)
}

// stop stops the producers and returns the payloads answered 202.
func (l *pinnedLoad) stop() []string {
	l.stopped.Store(true)
	l.wg.Wait()
	return l.sent
}

// ownedBy lists the partitions of the test topic that node id owns, as m sees them.
func ownedBy(t *testing.T, m *member, id uint64) []int {
	r := m.c.expect(http.StatusOK, http.MethodGet, "/v1/topics/cluster", "")
	var topic struct {
		Stats []struct {
			Index int    `json:"index"`
			Owner string `json:"owner_node"`
		} `json:"partition_stats"`
	}
	if err := json.Unmarshal(r.body, &topic); err != nil {
		t.Fatalf("topic: %v: %s", err, r.body)
	}
	var out []int
	for _, s := range topic.Stats {
		if s.Owner == strconv.FormatUint(id, 10) {
			out = append(out, s.Index)
		}
	}
	return out
}

// failedSends reads m's count of peer messages whose send failed (0 before the first).
func failedSends(m *member) float64 {
	r, err := m.c.try(http.MethodGet, "/metrics", "")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(r.body), "\n") {
		if v, ok := strings.CutPrefix(line, `narad_peer_messages_total{result="failed"} `); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}
