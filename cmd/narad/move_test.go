package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// moveShapeBound bounds each change of shape in TestClusterChangesShape: the joiner's
// partitions moved to it, then node 1's moved away and node 1 removed.
const moveShapeBound = 120 * time.Second

// TestClusterChangesShape (issue 14): three `narad serve` processes under produce and
// consume load; a fourth joins and the metastore leader moves partitions to it (each
// copied, frozen, cut over); node 1 is then decommissioned: its partitions move to the
// others, it is removed and its process exits 0. The load goes on throughout (a producer
// may be refused by the node being drained, a consumer's ack by a partition being frozen:
// both are retried or redelivered). Every payload answered 202 is consumed, byte for byte.
func TestClusterChangesShape(t *testing.T) {
	bin, ms := clusterUnderTest(t)
	// Leases of 5 s: one a move ended (taken at a former owner, or released by a router
	// to a partition frozen then) comes back within the drain, as at-least-once says.
	createClusterTopicWith(t, ms, 5_000)
	fourth := &member{id: 4, addr: freeAddrs(t, 1)[0], dir: t.TempDir()}
	fourth.down.Store(true)
	all := append(ms[:len(ms):len(ms)], fourth)
	l := startClusterLoad(all)
	defer l.stop()
	cons := startConsumers(all)
	defer cons.stop()
	l.waitAcked(t, 500)

	fourth.c = spawnMember(t, bin, ms, fourth)
	fourth.c.waitReady()
	fourth.down.Store(false)
	eventually(t, moveShapeBound, "the joiner owns partitions and no move is left", func() bool {
		return owned(ms[0], 4) > 0 && movesLeft(ms[0]) == 0
	})
	t.Logf("node 4 owns %d partitions", owned(ms[0], 4))
	l.waitAcked(t, l.total.Load()+500)

	ms[0].down.Store(true) // the producers and consumers leave it: it refuses produces now
	eventually(t, clusterFormBound, "node 1's decommission is answered 202", func() bool {
		r, err := ms[1].c.try(http.MethodPost, "/v1/cluster/members/1/decommission", "")
		return err == nil && r.status == http.StatusAccepted
	})
	if s := ms[0].c.waitExit(moveShapeBound); s != 0 {
		t.Fatalf("the decommissioned node exited with %d, want 0", s)
	}
	eventually(t, clusterFormBound, "three members are left, none moving", func() bool {
		ls, err := listMembers(ms[1])
		return err == nil && len(ls.Members) == 3 && ls.alive() == 3 && movesLeft(ms[1]) == 0
	})
	l.waitAcked(t, l.total.Load()+500)
	l.stop()
	cons.stop()
	checkOnlyUnavailable(t, l)
	delivered := cons.merged()
	rest := all[1:]
	for quiet, deadline := 0, time.Now().Add(clusterDrainBound); quiet < 2; {
		if time.Now().After(deadline) {
			reportUndrained(t, rest, l, delivered)
			t.Fatalf("still draining after %v", clusterDrainBound)
		}
		got := 0
		for _, m := range rest {
			got += drainMoving(m, delivered)
		}
		if got > 0 || len(l.missing(delivered)) > 0 || clusterBacklog(t, rest) > 0 {
			quiet = 0
		} else {
			quiet++
		}
	}
	checkClusterDelivered(t, l, delivered)
}

// checkOnlyUnavailable allows the producers one unusual answer only: 503, while the
// metastore leader hands its leadership on before its removal (no leader for a moment);
// a client retries it.
func checkOnlyUnavailable(t *testing.T, l *clusterLoad) {
	n := 0
	for p, us := range l.unusual {
		for _, u := range us {
			if !strings.HasSuffix(u, "503 Service Unavailable") {
				t.Errorf("producer %d got %q from a live node", p, u)
			}
			n++
		}
	}
	t.Logf("%d produces answered 503 by live nodes (a leader change)", n)
}

// owned is how many partitions member id owns, as m lists the members (0 on an error).
func owned(m *member, id uint64) int {
	ls, err := listMembers(m)
	for _, x := range ls.Members {
		if x.ID == id && err == nil {
			return x.Owned
		}
	}
	return 0
}

// movesLeft is how many moves m lists in progress (-1 on an error).
func movesLeft(m *member) int {
	r, err := m.c.try(http.MethodGet, "/v1/cluster/moves", "")
	var mv struct {
		Moves []json.RawMessage `json:"moves"`
	}
	if err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &mv) != nil {
		return -1
	}
	return len(mv.Moves)
}

// consumers consume and ack from every node that is up while the shape changes,
// tolerating what a move makes happen (a frozen partition's 503, a lease gone with its
// move); they count every payload delivered.
type consumers struct {
	ms        []*member
	stopped   atomic.Bool
	wg        sync.WaitGroup
	delivered [4]map[string]int // one per consumer
}

func startConsumers(ms []*member) *consumers {
	c := &consumers{ms: ms}
	for i := range c.delivered {
		c.delivered[i] = map[string]int{}
		c.wg.Add(1)
		go c.run(i)
	}
	return c
}

// run consumes from the members in turn, leaving out those that are down (two at least
// are up: each poll waits for records up to 100 ms).
func (c *consumers) run(i int) {
	defer c.wg.Done()
	for n := i; !c.stopped.Load(); n++ {
		if m := c.ms[n%len(c.ms)]; !m.down.Load() {
			drainMoving(m, c.delivered[i])
		}
	}
}

func (c *consumers) stop() {
	c.stopped.Store(true)
	c.wg.Wait()
}

// merged adds up what the consumers were delivered (after stop).
func (c *consumers) merged() map[string]int {
	out := map[string]int{}
	for _, d := range c.delivered {
		for k, v := range d {
			out[k] += v
		}
	}
	return out
}

// drainMoving takes up to 100 leases on m and acks them, as a client does: an ack
// answered 503 (a partition frozen, or a node whose replica routes it to the former
// owner) is sent again, up to ackRetriesMax times, 20 ms apart (the answer's
// Retry-After is a second; the move ends sooner); a lease answered gone ended with a
// move, and its record comes again (a duplicate).
func drainMoving(m *member, delivered map[string]int) int {
	r, err := m.c.try(http.MethodGet, "/v1/topics/cluster/consume?max=100&wait=100ms", "")
	if err != nil || r.status != http.StatusOK {
		return 0
	}
	var page struct {
		Messages []messageJSON `json:"messages"`
	}
	if json.Unmarshal(r.body, &page) != nil {
		return 0
	}
	handles := make([]string, len(page.Messages))
	for i, msg := range page.Messages {
		var s string
		if json.Unmarshal(msg.Payload, &s) != nil {
			s = fmt.Sprintf("undecodable payload %s", msg.Payload)
		}
		delivered[s]++
		handles[i] = msg.ReceiptHandle
	}
	ackUntilAnswered(m, handles)
	return len(page.Messages)
}

// ackRetriesMax bounds the tries of one batch ack in drainMoving.
const ackRetriesMax = 250

func ackUntilAnswered(m *member, handles []string) {
	for try := 0; try < ackRetriesMax && len(handles) > 0; try++ {
		if try > 0 {
			<-time.After(20 * time.Millisecond) // the client's backoff before a retry
		}
		body, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
		r, err := m.c.try(http.MethodPost, "/v1/topics/cluster/ack", string(body))
		if err != nil || r.status != http.StatusOK {
			continue // 503 for the whole batch: all again
		}
		var res struct {
			Results []struct {
				Status int `json:"status"`
			} `json:"results"`
		}
		if json.Unmarshal(r.body, &res) != nil || len(res.Results) != len(handles) {
			continue
		}
		var again []string
		for i, x := range res.Results {
			if x.Status == http.StatusServiceUnavailable {
				again = append(again, handles[i])
			}
		}
		handles = again
	}
}
