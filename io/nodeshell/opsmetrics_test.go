package nodeshell

import (
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
)

// gauges gathers reg and returns each gauge's value by family name (and, for
// narad_cluster_members, by "name/status").
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_GAUGE {
			continue
		}
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}

// A single node is its own metastore leader and its only member and voter; the data disk's
// space is that of the directory's file system.
func TestOpsMetrics(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, node.Config{NodeID: "ops", Addr: "127.0.0.1:7942", Meta: meta.Config{ID: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	reg := prometheus.NewRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s)
	var g map[string]float64
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for g = gauges(t, reg); g["narad_cluster_members/alive"] != 1; g = gauges(t, reg) {
		if time.Now().After(deadline) {
			t.Fatalf("the node is not listed alive: %v", g)
		}
		<-tick.C
	}
	for name, want := range map[string]float64{"narad_cluster_members/dead": 0, "narad_cluster_voters": 1,
		"narad_metastore_leader_id": 3, "narad_metastore_is_leader": 1} {
		if got, ok := g[name]; !ok || got != want {
			t.Errorf("%s = %v (exported: %v), want %v", name, got, ok, want)
		}
	}
	if g["narad_metastore_term"] < 1 {
		t.Errorf("narad_metastore_term = %v, want 1 or more", g["narad_metastore_term"])
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	size, free := g["narad_data_disk_size_bytes"], g["narad_data_disk_free_bytes"]
	if size != float64(st.Blocks*uint64(st.Bsize)) || free <= 0 || free > size {
		t.Errorf("disk: size %v free %v; statfs says %d blocks of %d", size, free, st.Blocks, st.Bsize)
	}
}
