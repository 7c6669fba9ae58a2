package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// decommissionJSON is the answer of POST /v1/cluster/members/{id}/decommission.
type decommissionJSON struct {
	Member     uint64 `json:"member"`
	DryRun     bool   `json:"dry_run"`
	Partitions int    `json:"partitions"`
	State      string `json:"state"`
	Allowed    *bool  `json:"allowed"`
	Refusal    string `json:"refusal"`
}

// TestDecommissionJoinedMember runs three `narad serve` processes with a topic, and a
// fourth that joins after it. A dry run of a member that owns partitions allows it (they
// would move away); the fourth's dry run allows it and changes nothing; its
// decommission is answered 202, it leaves the members, and the process exits 0. The
// topic still takes a produce.
func TestDecommissionJoinedMember(t *testing.T) {
	bin, ms := clusterUnderTest(t)
	createClusterTopic(t, ms)
	addr := freeAddrs(t, 1)[0]
	fourth := &member{id: 4, addr: addr, dir: t.TempDir()}
	fourth.c = spawnMember(t, bin, ms, fourth) // told of the three: it joins them
	fourth.c.waitReady()
	eventually(t, clusterFormBound, "node 1 lists 4 live members", func() bool {
		ls, err := listMembers(ms[0])
		return err == nil && ls.alive() == 4
	})
	path := func(m *member, dry bool) string {
		return fmt.Sprintf("/v1/cluster/members/%d/decommission?dry_run=%v", m.id, dry)
	}
	var owner decommissionJSON // partitions move away: a member that owns some is allowed
	r := ms[0].c.expect(http.StatusOK, http.MethodPost, path(ms[1], true), "")
	if err := strictDecode(r.body, &owner); err != nil || owner.Allowed == nil || !*owner.Allowed {
		t.Fatalf("dry run of a member with partitions: %v %s", err, r.body)
	}
	var dry decommissionJSON
	r = ms[0].c.expect(http.StatusOK, http.MethodPost, path(fourth, true), "")
	if err := strictDecode(r.body, &dry); err != nil || dry.Allowed == nil || !*dry.Allowed || !dry.DryRun {
		t.Fatalf("dry run: %v %s", err, r.body)
	}
	var done decommissionJSON
	eventually(t, clusterFormBound, "the decommission is answered 202", func() bool {
		r, err := ms[0].c.try(http.MethodPost, path(fourth, false), "")
		return err == nil && r.status == http.StatusAccepted && json.Unmarshal(r.body, &done) == nil
	})
	if done.State != "draining" || done.Member != 4 {
		t.Fatalf("decommission: %+v", done)
	}
	if s := fourth.c.waitExit(clusterFormBound); s != 0 {
		t.Fatalf("the removed node exited with %d, want 0", s)
	}
	eventually(t, clusterFormBound, "node 1 lists 3 members", func() bool {
		ls, err := listMembers(ms[0])
		return err == nil && len(ls.Members) == 3 && ls.alive() == 3
	})
	eventually(t, clusterFormBound, "a produce after the removal is answered 202", func() bool {
		resp, err := postAuth(ms[0].c.client, ms[0].c.base+"/v1/topics/cluster/produce", "application/octet-stream",
			strings.NewReader("after the removal"))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	})
}
