package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// forgetJSON is the answer of POST /v1/cluster/members/{id}/forget.
type forgetJSON struct {
	Member     uint64 `json:"member"`
	DryRun     bool   `json:"dry_run"`
	Partitions []struct {
		Topic       string  `json:"topic"`
		Partition   uint32  `json:"partition"`
		From        uint64  `json:"from"`
		To          uint64  `json:"to"`
		Epoch       uint32  `json:"epoch"`
		FirstOffset uint64  `json:"first_offset"`
		HW          *uint64 `json:"high_watermark"`
		Oldest      *uint64 `json:"oldest_offset"`
		Lost        *uint64 `json:"records_lost"`
	} `json:"partitions"`
	RecordsLost uint64 `json:"records_lost"`
	Unmarked    int    `json:"partitions_without_marks"`
}

// checkLost: each partition's records lost are its last mark's span, or all three are
// null and counted unmarked; the total is their sum.
func (f forgetJSON) checkLost(t *testing.T) {
	t.Helper()
	var sum uint64
	unmarked := 0
	for _, p := range f.Partitions {
		switch {
		case p.HW == nil && p.Oldest == nil && p.Lost == nil:
			unmarked++
		case p.HW == nil || p.Oldest == nil || p.Lost == nil || *p.Lost != *p.HW-*p.Oldest:
			t.Fatalf("partition %d: records lost of its last mark inconsistent: %+v", p.Partition, p)
		default:
			sum += *p.Lost
		}
	}
	if sum != f.RecordsLost || unmarked != f.Unmarked {
		t.Fatalf("forget answer: records_lost %d (sum %d), unmarked %d (counted %d)", f.RecordsLost, sum,
			f.Unmarked, unmarked)
	}
}

// TestForgetDeadMember runs three `narad serve` processes, kills one with SIGKILL, and
// gives it up over HTTP: a live member is refused (409), the dry run names the dead one's
// partitions and changes nothing, the forget hands them to live members under epoch 1,
// a produce to such a partition is answered 202 and consumed at the epoch's first
// offset, and the forgotten node, started again on its directory, is told by the others
// and exits with status 1 instead of serving its old copies.
func TestForgetDeadMember(t *testing.T) {
	bin, ms := clusterUnderTest(t)
	leader := createClusterTopic(t, ms)
	dead := ms[(leader+1)%len(ms)]
	via := ms[(leader+2)%len(ms)]
	path := func(m *member, dry bool) string {
		return fmt.Sprintf("/v1/cluster/members/%d/forget?dry_run=%v", m.id, dry)
	}
	via.c.expect(http.StatusConflict, http.MethodPost, path(dead, true), "")
	dead.c.kill()
	dead.down.Store(true)
	waitMarkedDead(t, via, dead)

	var dry forgetJSON
	if err := json.Unmarshal(via.c.expect(http.StatusOK, http.MethodPost, path(dead, true), "").body, &dry); err != nil ||
		!dry.DryRun || len(dry.Partitions) == 0 {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	dry.checkLost(t)
	if ls, _ := listMembers(via); len(ls.Members) != len(ms) {
		t.Fatalf("the dry run changed the members: %+v", ls.Members)
	}
	var done forgetJSON
	eventually(t, clusterFormBound, "the forget is answered 200", func() bool {
		r, err := via.c.try(http.MethodPost, path(dead, false), "")
		return err == nil && r.status == http.StatusOK && json.Unmarshal(r.body, &done) == nil
	})
	p := done.Partitions[0]
	if p.From != dead.id || p.To == dead.id || p.Epoch != 1 || p.FirstOffset != 1<<40 {
		t.Fatalf("forget: %+v", done)
	}
	if ls, _ := listMembers(via); len(ls.Members) != len(ms)-1 {
		t.Fatalf("members after the forget: %+v", ls.Members)
	}
	produce := fmt.Sprintf("/v1/topics/cluster/produce?partition=%d", p.Partition)
	eventually(t, clusterFormBound, "a produce to a reassigned partition is answered 202", func() bool {
		resp, err := postAuth(via.c.client, via.c.base+produce, "application/octet-stream",
			strings.NewReader("after the forget"))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	})
	var msg messageJSON
	eventually(t, clusterFormBound, "the record is consumed at the new epoch's first offset", func() bool {
		r, err := via.c.try(http.MethodGet, fmt.Sprintf("/v1/topics/cluster/consume?partition=%d&wait=200ms", p.Partition), "")
		return err == nil && r.status == http.StatusOK && json.Unmarshal(r.body, &msg) == nil
	})
	if msg.Offset != p.FirstOffset {
		t.Fatalf("consumed %+v, want offset %d", msg, p.FirstOffset)
	}

	back := spawnMember(t, bin, ms, dead)
	if s := back.waitExit(clusterFormBound); s != 1 {
		t.Fatalf("the forgotten node came back and exited with %d, want 1", s)
	}
}

// waitExit waits up to bound for the child to exit on its own and returns its status.
func (c *child) waitExit(bound time.Duration) int {
	c.t.Helper()
	select {
	case <-c.logged:
	case <-time.After(bound):
		c.kill()
		c.t.Fatalf("%s did not exit within %v", c.name, bound)
	}
	err := c.cmd.Wait()
	c.exited = true
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return 0
}
