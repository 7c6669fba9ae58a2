package main

import (
	"net/http"
	"testing"
)

// TestClusterGrownFromOneNode starts one `narad serve` alone (its -peers names only
// itself), then two more that name only it: they join as learners and the metastore
// leader makes them voters (3 for three members). Then the first node is killed: the two
// others elect a leader among themselves and take a topic write, which a cluster with one
// voter could not.
func TestClusterGrownFromOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three narad processes")
	}
	bin := buildNarad(t)
	t.Setenv("NARAD_CLUSTER_SECRET", clusterSecret)
	addrs := freeAddrs(t, 3)
	ms := make([]*member, 3)
	for i := range ms {
		ms[i] = &member{id: uint64(i + 1), addr: addrs[i], dir: t.TempDir()}
	}
	first := ms[:1] // every node is told of the first one only
	ms[0].c = spawnMember(t, bin, first, ms[0])
	ms[0].c.waitReady()
	for _, m := range ms[1:] {
		m.c = spawnMember(t, bin, first, m)
		m.c.waitReady()
	}
	eventually(t, clusterFormBound, "node 1 lists three live voters", func() bool {
		ls, err := listMembers(ms[0])
		voters := 0
		for _, m := range ls.Members {
			if m.Voter && m.Status == "alive" {
				voters++
			}
		}
		return err == nil && voters == 3
	})
	ms[0].c.kill()
	body := `{"name":"grown","partitions":2}`
	eventually(t, clusterFormBound, "nodes 2 and 3 take a topic write without node 1", func() bool {
		for _, m := range ms[1:] {
			if r, err := m.c.try(http.MethodPost, "/v1/topics", body); err == nil &&
				(r.status == http.StatusCreated || r.status == http.StatusConflict) {
				return true
			}
		}
		return false
	})
	for _, m := range ms[1:] {
		if s := m.c.terminate(); s != 0 {
			t.Errorf("node %d exited with %d after SIGTERM, want 0", m.id, s)
		}
	}
	t.Logf("grown to three voters; the write went through without node %d", ms[0].id)
}
