package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/core/dispatch"
)

// Shape of the re-dispatch test.
const (
	redispatchMessages    = 3000 // produces sent to the lone survivor before it is killed
	redispatchMessagesMin = 300  // of which at least this many must be answered 202
	redispatchProducers   = 8
	// redispatchSlackPercent is the duplicates allowed on top of the stated bound, in
	// percent of the messages: records committed while the test looked away (its polls).
	redispatchSlackPercent = 2
	redispatchSettleBound  = 30 * time.Second
	redispatchQuietMargin  = 250 * time.Millisecond
)

// TestClusterRedispatchBound is the black-box run of issue 11: a node takes produces while
// both its peers are dead, so only its own partitions' records commit and the checkpoint
// sticks at the first record of a dead owner's partition; then it is killed with SIGKILL
// and the whole cluster restarts. Before the skip-set was written with the checkpoint
// every record the survivor had committed was committed again (a third of them here).
// Now only those whose commit was answered within dispatch.RedispatchWindowNs of the kill
// may be: duplicates must stay within the records answered 202 in that window before the
// kill, plus redispatchSlackPercent of all. Every 202 must be delivered.
func TestClusterRedispatchBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three narad processes")
	}
	bin := buildNarad(t)
	t.Setenv("NARAD_CLUSTER_SECRET", clusterSecret)
	ms := startCluster(t, bin)
	createClusterTopic(t, ms)
	survivor := ms[0]
	for _, m := range ms[1:] {
		m.down.Store(true)
		m.c.kill()
	}
	l := &clusterLoad{ms: ms}
	times := produceTimed(t, survivor, l, redispatchMessages)
	// Let the survivor commit what it can (its own partitions' records) and wait until its
	// commit count has not moved for longer than the bound, so that the records it
	// committed are all older than the bound when it is killed: then none may come twice.
	commits, movedAt := -1.0, time.Now()
	eventually(t, redispatchSettleBound, "the survivor's commits stop for the bound", func() bool {
		if c := survivor.c.commits(); c != commits {
			commits, movedAt = c, time.Now()
		}
		return time.Since(movedAt) > time.Duration(dispatch.RedispatchWindowNs)+redispatchQuietMargin
	})
	last := survivor.c.backlog()
	killedAt := time.Now()
	survivor.c.kill()
	inWindow := 0
	for _, at := range times {
		if killedAt.Sub(at) <= time.Duration(dispatch.RedispatchWindowNs) {
			inWindow++
		}
	}
	t.Logf("killed node %d with %v records in its backlog; %d of %d 202s came in the last %v",
		survivor.id, last, inWindow, len(times), time.Duration(dispatch.RedispatchWindowNs))

	for _, m := range ms {
		m.c = spawnMember(t, bin, ms, m)
		m.down.Store(false)
	}
	for _, m := range ms {
		m.c.waitReady()
	}
	t.Logf("the survivor made %v partition commits", commits)
	delivered := drainCluster(t, ms, l)
	checkClusterDelivered(t, l, delivered)
	dups := 0
	for _, n := range delivered { //narad:unordered (a sum)
		dups += n - 1
	}
	bound := inWindow + len(times)*redispatchSlackPercent/100
	t.Logf("%d duplicates of %d messages (bound %d)", dups, len(times), bound)
	if dups > bound {
		t.Errorf("%d duplicates after the crash, more than %d: the re-dispatch is not bounded by the skip-set", dups, bound)
	}
	for _, m := range ms {
		if s := m.c.terminate(); s != 0 {
			t.Errorf("node %d exited with %d after SIGTERM, want 0", m.id, s)
		}
	}
}

// produceTimed sends up to n payloads to m from redispatchProducers producers, recording
// each 202 in l (as the cluster load does) and returning when each was answered. A node
// alone takes produces only until it notices it has no metastore leader (it answers 503
// from then on): a producer stops at the first such answer.
func produceTimed(t *testing.T, m *member, l *clusterLoad, n int) []time.Time {
	client := &http.Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var times []time.Time
	var wg sync.WaitGroup
	for p := range redispatchProducers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/redispatchProducers; i++ {
				l.attempted[p] = i + 1
				resp, err := client.Post(m.c.base+"/v1/topics/cluster/produce", "application/octet-stream", bytes.NewReader(clusterPayload(p, i)))
				if err != nil {
					l.unusual[p] = append(l.unusual[p], err.Error())
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable && bytes.Contains(body, []byte("no metastore leader")) {
					return // the lone node has lost its quorum's leader: it takes no more
				}
				if resp.StatusCode != http.StatusAccepted {
					l.unusual[p] = append(l.unusual[p], fmt.Sprintf("%d: %s %s", i, resp.Status, body))
					return
				}
				l.acked[p] = append(l.acked[p], sentTo{n: i, node: m.id})
				l.total.Add(1)
				mu.Lock()
				times = append(times, time.Now())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	l.checkUnusual(t)
	if len(times) < redispatchMessagesMin {
		t.Fatalf("only %d produces answered 202 before the lone node refused them", len(times))
	}
	return times
}

// commits reads the count of narad_partition_commit_seconds: partition commits made.
func (c *child) commits() float64 {
	c.t.Helper()
	return metricValue(c.t, string(c.expect(http.StatusOK, http.MethodGet, "/metrics", "").body), "narad_partition_commit_seconds_count")
}
