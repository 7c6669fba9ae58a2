package nodeshell

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/node"
)

// metrics holds what the shell measures itself (disk latencies) and exports the core's
// counters on scrape.
type metrics struct {
	mu      sync.Mutex
	issued  map[uint64]issuedOp
	walSync prometheus.Histogram
	plogOp  prometheus.Histogram
	// peerMessages counts the core's messages to peers by result: sent (handed to a
	// QUIC stream), failed (no connection, or the write failed), dropped (a full queue).
	peerMessages *prometheus.CounterVec
}

type issuedOp struct {
	at   int64
	kind disk.Kind
	wal  bool
}

func newMetrics() *metrics {
	return &metrics{
		issued: map[uint64]issuedOp{},
		walSync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "narad_wal_fsync_seconds", Help: "Latency of the ingress WAL's group-commit fdatasync.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14),
		}),
		plogOp: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "narad_partition_fsync_seconds", Help: "Latency of partition log fdatasyncs (commitDurable's sync step).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14),
		}),
		peerMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "narad_peer_messages_total", Help: "Messages to peers (raft, heartbeats, remote commits) by result: sent, failed, dropped.",
		}, []string{"result"}),
	}
}

// opIssued notes the start of a sync measured by a histogram: a WAL segment's (a group
// commit) or a partition log's. Other syncs (the WAL checkpoint, the metastore's raft log,
// the ack logs) are not timed: they would blur both histograms.
func (m *metrics) opIssued(op disk.Op, at int64) {
	if op.Kind != disk.KindSync {
		return
	}
	wal := strings.HasPrefix(op.Name, "wal/") && strings.HasSuffix(op.Name, ".seg")
	if !wal && !strings.HasPrefix(op.Name, "parts/") {
		return
	}
	m.mu.Lock()
	m.issued[op.ID] = issuedOp{at: at, kind: op.Kind, wal: wal}
	m.mu.Unlock()
}

func (m *metrics) opDone(res disk.Result, at int64) {
	if res.Kind != disk.KindSync {
		return
	}
	m.mu.Lock()
	op, ok := m.issued[res.ID]
	delete(m.issued, res.ID)
	m.mu.Unlock()
	if !ok {
		return
	}
	secs := time.Duration(at - op.at).Seconds()
	if op.wal {
		m.walSync.Observe(secs)
	} else {
		m.plogOp.Observe(secs)
	}
}

// Register adds the node's metrics to reg: the shell's latency histograms, a collector
// that reads the core's counters on every scrape, and one of the cluster's state and the
// data disk's space (opsmetrics.go).
func (s *Shell) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.metrics.walSync, s.metrics.plogOp, s.metrics.peerMessages, &coreCollector{s: s},
		&opsCollector{s: s}} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

var (
	descRecordsPerSync = prometheus.NewDesc("narad_wal_records_per_fsync", "Records acknowledged per WAL group-commit fdatasync, since start.", nil, nil)
	descWALSyncs       = prometheus.NewDesc("narad_wal_fsyncs_total", "WAL group-commit fdatasyncs that succeeded.", nil, nil)
	descWALRecords     = prometheus.NewDesc("narad_wal_records_total", "Records made durable in the WAL.", nil, nil)
	descBacklog        = prometheus.NewDesc("narad_dispatcher_backlog_records", "WAL records a restart would replay (not yet dispatched).", nil, nil)
	descBacklogBytes   = prometheus.NewDesc("narad_dispatcher_backlog_bytes", "Payload bytes of those records.", nil, nil)
	descInFlight       = prometheus.NewDesc("narad_leases_in_flight", "Consume leases held, all partitions.", nil, nil)
	descCommitSeconds  = prometheus.NewDesc("narad_partition_commit_seconds", "commitDurable latency (append, fsync, read-back, verify).", nil, nil)
	descPartsFailed    = prometheus.NewDesc("narad_partitions_failed", "This node's partitions failed now (a failed fdatasync or read-back), waiting for their reopen.", nil, nil)
	descPartFailures   = prometheus.NewDesc("narad_partition_failures_total", "Partition failures since the process started.", nil, nil)
	descWALNoSpace     = prometheus.NewDesc("narad_wal_no_space", "1 while the ingress WAL's device is full: produces are answered 507.", nil, nil)
	descWALNoSpaceW    = prometheus.NewDesc("narad_wal_no_space_writes_total", "WAL writes that found no space (a group's appends refused, or a checkpoint tried again).", nil, nil)
	descPartReopens    = prometheus.NewDesc("narad_partition_reopens_total", "Failed partitions reopened (recovered from disk) since the process started.", nil, nil)
	descMovesDone      = prometheus.NewDesc("narad_moves_done_total", "Partition moves this node took over as their destination, since the process started.", nil, nil)
	descMovesDropped   = prometheus.NewDesc("narad_moves_dropped_total", "Partition copies this node dropped (the move aborted or ended otherwise).", nil, nil)
	descMoveBytes      = prometheus.NewDesc("narad_move_copied_bytes_total", "Key and payload bytes this node copied for partition moves.", nil, nil)
	descMoveFreeze     = prometheus.NewDesc("narad_move_freeze_seconds", "A move's freeze, from its application here to the cutover's (the partition takes no commit meanwhile).", nil, nil)
	descMovesReleased  = prometheus.NewDesc("narad_moves_released_total", "Partition copies this node removed after their new owner served them.", nil, nil)
)

type coreCollector struct{ s *Shell }

func (c *coreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecordsPerSync, descWALSyncs, descWALRecords, descBacklog, descBacklogBytes, descInFlight, descCommitSeconds,
		descPartsFailed, descPartFailures, descPartReopens, descWALNoSpace, descWALNoSpaceW,
		descMovesDone, descMovesDropped, descMoveBytes, descMoveFreeze, descMovesReleased} {
		ch <- d
	}
}

func (c *coreCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	st := c.s.node.Stats()
	c.s.mu.Unlock()
	perSync := 0.0
	if st.WAL.GroupsSynced > 0 {
		perSync = float64(st.WAL.RecordsSynced) / float64(st.WAL.GroupsSynced)
	}
	ch <- prometheus.MustNewConstMetric(descRecordsPerSync, prometheus.GaugeValue, perSync)
	ch <- prometheus.MustNewConstMetric(descWALSyncs, prometheus.CounterValue, float64(st.WAL.GroupsSynced))
	ch <- prometheus.MustNewConstMetric(descWALRecords, prometheus.CounterValue, float64(st.WAL.RecordsSynced))
	ch <- prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, float64(st.BacklogRecords))
	ch <- prometheus.MustNewConstMetric(descBacklogBytes, prometheus.GaugeValue, float64(st.BacklogBytes))
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(st.LeasesInFlight))
	ch <- prometheus.MustNewConstMetric(descPartsFailed, prometheus.GaugeValue, float64(st.PartitionsFailed))
	ch <- prometheus.MustNewConstMetric(descPartFailures, prometheus.CounterValue, float64(st.PartitionFailures))
	ch <- prometheus.MustNewConstMetric(descPartReopens, prometheus.CounterValue, float64(st.PartitionReopens))
	noSpace := 0.0
	if st.WAL.NoSpaceNow {
		noSpace = 1
	}
	ch <- prometheus.MustNewConstMetric(descWALNoSpace, prometheus.GaugeValue, noSpace)
	ch <- prometheus.MustNewConstMetric(descWALNoSpaceW, prometheus.CounterValue, float64(st.WAL.NoSpaceWrites))
	ch <- secondsHistogram(descCommitSeconds, st.CommitLatency)
	mv := st.Moves
	ch <- prometheus.MustNewConstMetric(descMovesDone, prometheus.CounterValue, float64(mv.Done))
	ch <- prometheus.MustNewConstMetric(descMovesDropped, prometheus.CounterValue, float64(mv.Dropped))
	ch <- prometheus.MustNewConstMetric(descMoveBytes, prometheus.CounterValue, float64(mv.BytesCopied))
	ch <- prometheus.MustNewConstMetric(descMovesReleased, prometheus.CounterValue, float64(mv.Released))
	ch <- secondsHistogram(descMoveFreeze, mv.FreezeNs)
}

// secondsHistogram is a core histogram of nanoseconds as a Prometheus one of seconds.
func secondsHistogram(d *prometheus.Desc, h node.Histogram) prometheus.Metric {
	buckets := map[float64]uint64{}
	var cum uint64
	for i, bound := range h.BoundsNs {
		cum += h.Counts[i]
		buckets[float64(bound)/1e9] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count, float64(h.SumNs)/1e9, buckets)
}
