package nodeshell

import (
	"context"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/narad/narad/core/meta"
)

// The metrics an operator alerts on beside the core's counters (ops/ holds the rules and
// the dashboard over them): the cluster as this node's metastore replica sees it, and
// the space left on the data directory's file system.

var (
	descMembers = prometheus.NewDesc("narad_cluster_members",
		"Members this node's metastore replica holds, by liveness (alive or dead; draining ones included). Absent until the node is ready.",
		[]string{"status"}, nil)
	descVoters = prometheus.NewDesc("narad_cluster_voters",
		"Voters of the metastore's applied raft configuration, as this node's replica holds it. Absent until the node is ready.", nil, nil)
	descLeaderID = prometheus.NewDesc("narad_metastore_leader_id",
		"Member id of the metastore's raft leader this node knows of; 0: none (an election, or no quorum).", nil, nil)
	descIsLeader = prometheus.NewDesc("narad_metastore_is_leader",
		"1 while this node is the metastore's raft leader, else 0.", nil, nil)
	descTerm = prometheus.NewDesc("narad_metastore_term",
		"The raft term this node's metastore replica is in: it grows by one or more at each election.", nil, nil)
	descDiskFree = prometheus.NewDesc("narad_data_disk_free_bytes",
		"Bytes available to the daemon on the data directory's file system (statfs at scrape).", nil, nil)
	descDiskSize = prometheus.NewDesc("narad_data_disk_size_bytes",
		"Size in bytes of the data directory's file system (statfs at scrape).", nil, nil)
)

// opsCollector exports the metrics above on every scrape.
type opsCollector struct{ s *Shell }

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMembers, descVoters, descLeaderID, descIsLeader, descTerm, descDiskFree, descDiskSize} {
		ch <- d
	}
}

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	leader, term := c.s.node.MetastoreLeader()
	c.s.mu.Unlock()
	isLeader := 0.0
	if leader != 0 && leader == c.s.id {
		isLeader = 1
	}
	ch <- prometheus.MustNewConstMetric(descLeaderID, prometheus.GaugeValue, float64(leader))
	ch <- prometheus.MustNewConstMetric(descIsLeader, prometheus.GaugeValue, isLeader)
	ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(term))
	// The members as GET /v1/cluster/members answers them: the core answers the list in
	// the step that asks, so a scrape never waits on the disk or the network. Before the
	// node is ready it answers an error: the families are left out rather than shown 0.
	if ms, err := c.s.Members(context.Background()); err == nil {
		var alive, dead, voters int
		for _, m := range ms {
			if m.Alive {
				alive++
			} else {
				dead++
			}
			if m.Voter {
				voters++
			}
		}
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(alive), "alive")
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(dead), "dead")
		ch <- prometheus.MustNewConstMetric(descVoters, prometheus.GaugeValue, float64(voters))
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(c.s.dir.Root(), &st); err == nil {
		bsize := uint64(st.Bsize)
		ch <- prometheus.MustNewConstMetric(descDiskFree, prometheus.GaugeValue, float64(st.Bavail*bsize))
		ch <- prometheus.MustNewConstMetric(descDiskSize, prometheus.GaugeValue, float64(st.Blocks*bsize))
	}
}

// runID is the member id the core runs under: cfg.Meta.ID, or the metastore's default
// for a node given none.
func runID(id uint64) uint64 {
	if id == 0 {
		return meta.DefaultID
	}
	return id
}
