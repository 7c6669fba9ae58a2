package httpapi

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics holds the layer's collectors. Looking a labelled child up in a vector hashes its
// labels and takes a lock, so the children are cached: per route (a duration observer and
// one request counter per status, made on first use) and per topic (a sync.Map of the four
// topic counters). A request then costs a few atomic adds and no allocation.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	producedMsgs  *prometheus.CounterVec
	producedBytes *prometheus.CounterVec
	consumedMsgs  *prometheus.CounterVec
	consumedBytes *prometheus.CounterVec

	topics sync.Map // topic name -> *topicMetrics
}

// durationBuckets reach from a fast produce (a fraction of a millisecond: one fdatasync)
// to the longest long poll (10 s).
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newMetrics(reg prometheus.Registerer) *metrics {
	topicCounter := func(name, help string) *prometheus.CounterVec {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"topic"}))
	}
	return &metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "narad_http_requests_total",
			Help: "HTTP requests served, by route pattern and status code.",
		}, []string{"route", "status"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "narad_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, long polls included, by route pattern.",
			Buckets: durationBuckets,
		}, []string{"route"})),
		producedMsgs:  topicCounter("narad_produced_messages_total", "Messages accepted by produce requests, by topic."),
		producedBytes: topicCounter("narad_produced_bytes_total", "Payload bytes accepted by produce requests, by topic."),
		consumedMsgs:  topicCounter("narad_consumed_messages_total", "Messages delivered by consume requests (leases and replays), by topic."),
		consumedBytes: topicCounter("narad_consumed_bytes_total", "Payload bytes delivered by consume requests, by topic."),
	}
}

// register registers c on reg, or returns the collector already registered under the same
// description, so that two servers can share one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic("httpapi: registering metrics: " + err.Error())
}

// statusSlots covers the status codes 100..599.
const statusSlots = 500

// routeMetrics are one route's cached children.
type routeMetrics struct {
	label    string
	requests *prometheus.CounterVec
	duration prometheus.Observer
	byStatus [statusSlots]atomic.Pointer[prometheus.Counter]
}

func (m *metrics) route(label string) *routeMetrics {
	return &routeMetrics{label: label, requests: m.requests, duration: m.duration.WithLabelValues(label)}
}

// observe counts one request that answered status after took.
func (rm *routeMetrics) observe(status int, took time.Duration) {
	rm.duration.Observe(took.Seconds())
	i := status - 100
	if i < 0 || i >= statusSlots {
		rm.requests.WithLabelValues(rm.label, strconv.Itoa(status)).Inc()
		return
	}
	c := rm.byStatus[i].Load()
	if c == nil {
		// Two first requests may race here; WithLabelValues returns the same child to both.
		child := rm.requests.WithLabelValues(rm.label, strconv.Itoa(status))
		c = &child
		rm.byStatus[i].Store(c)
	}
	(*c).Inc()
}

// topicMetrics are one topic's cached children.
type topicMetrics struct {
	producedMsgs, producedBytes, consumedMsgs, consumedBytes prometheus.Counter
}

// topic returns name's children, making them on first use. Only names the broker accepted
// get here, so the label's cardinality is that of the topics that exist.
func (m *metrics) topic(name string) *topicMetrics {
	if v, ok := m.topics.Load(name); ok {
		return v.(*topicMetrics)
	}
	name = strings.Clone(name) // name may be a slice of a request's path
	tm := &topicMetrics{
		producedMsgs:  m.producedMsgs.WithLabelValues(name),
		producedBytes: m.producedBytes.WithLabelValues(name),
		consumedMsgs:  m.consumedMsgs.WithLabelValues(name),
		consumedBytes: m.consumedBytes.WithLabelValues(name),
	}
	v, _ := m.topics.LoadOrStore(name, tm)
	return v.(*topicMetrics)
}

// produced counts n accepted messages of bytes payload bytes in all.
func (m *metrics) produced(topic string, n, bytes int) {
	tm := m.topic(topic)
	tm.producedMsgs.Add(float64(n))
	tm.producedBytes.Add(float64(bytes))
}

// consumed counts n delivered messages of bytes payload bytes in all.
func (m *metrics) consumed(topic string, n, bytes int) {
	tm := m.topic(topic)
	tm.consumedMsgs.Add(float64(n))
	tm.consumedBytes.Add(float64(bytes))
}

// forgetTopic drops a deleted topic's series, so that deleted topics do not pile up.
func (m *metrics) forgetTopic(name string) {
	m.topics.Delete(name)
	for _, v := range []*prometheus.CounterVec{m.producedMsgs, m.producedBytes, m.consumedMsgs, m.consumedBytes} {
		v.DeleteLabelValues(name)
	}
}
