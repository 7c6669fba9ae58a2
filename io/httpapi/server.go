package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/auth"
	"github.com/narad/narad/io/statusui"
)

// Broker is what the HTTP layer drives: one node (io/nodeshell implements it). Every method
// may block (a produce until its records are durable, a consume up to its long-poll bound)
// and must return when ctx is done.
//
// Ownership: Produce may keep the Key and Payload slices of msgs for as long as it likes
// (the HTTP layer never reuses them), but not the msgs slice itself, which the layer reuses
// once Produce returns.
type Broker interface {
	// Produce stores msgs in one group commit and returns once all are durable.
	Produce(ctx context.Context, topic string, msgs []node.ProduceMessage) (accepted int, err error)
	// Consume blocks up to req.WaitNs for a long poll; an empty slice means nothing (204).
	Consume(ctx context.Context, req node.ConsumeRequest) ([]node.Message, error)
	// Ack returns one error per handle, in order (nil: 204); actor is the caller (as in
	// node.ConsumeRequest.Actor, which Consume's req carries).
	Ack(ctx context.Context, actor, topic string, handles []string, mode node.AckMode) ([]error, error)
	CreateTopic(ctx context.Context, spec node.TopicSpec) (node.Topic, error)
	GetTopic(ctx context.Context, name string) (node.Topic, []node.PartitionStats, error)
	// ListTopics returns up to limit topics named after after, in name order, and next:
	// the last name of the page when more may follow, "" when the listing is done.
	ListTopics(ctx context.Context, limit int, after string) (topics []node.Topic, next string, err error)
	PatchTopic(ctx context.Context, name string, p node.TopicPatch) (node.Topic, error)
	// DeleteTopic deletes a topic as actor asks (every topic write names its actor).
	DeleteTopic(ctx context.Context, actor, name string) error
	// Members lists the cluster's members as the node's metastore replica knows them.
	Members(ctx context.Context) ([]node.MemberInfo, error)
	// ForgetMember gives up a dead member (node.Node.ForgetMember), or with dryRun says
	// what that would give up.
	ForgetMember(ctx context.Context, id uint64, dryRun bool) (node.ForgetReport, error)
	// DecommissionMember starts draining a member (node.Node.DecommissionMember), or with
	// dryRun says whether it would; CancelDecommission stops the drain.
	DecommissionMember(ctx context.Context, id uint64, dryRun bool) (node.DecommissionReport, error)
	CancelDecommission(ctx context.Context, id uint64) error
	// Moves lists the partition moves in progress; MovePartition starts one and AbortMove
	// ends one before its cutover (node.Node's of the same names).
	Moves(ctx context.Context) ([]node.MoveInfo, error)
	MovePartition(ctx context.Context, topic string, part uint32, to uint64) error
	AbortMove(ctx context.Context, topic string, part uint32) error
	Rebalance(ctx context.Context) error
	// Ready is nil when the node serves requests, else the reason (503 on /readyz).
	Ready() error
	UserBroker
}

// Options configure a Server. The zero value is usable.
type Options struct {
	// Logger gets one debug line per request and a warning per 5xx; nil: slog.Default().
	Logger *slog.Logger
	// Registry receives the layer's metrics and is served on /metrics; nil: a new registry
	// with the Go runtime and process collectors.
	Registry *prometheus.Registry
	// InFlightMax bounds the produce requests (single and batch) being served at once; one
	// more is answered 429 at once. 0: unlimited.
	InFlightMax int
	// Auth checks every /v1 route's and /metrics' credentials against the node's users
	// (access.go); nil: security off (narad serve -dev), every route open.
	Auth *auth.Authenticator
}

// Server is the HTTP layer of one node. It is safe for concurrent use.
type Server struct {
	b        Broker
	auth     *auth.Authenticator // nil: security off
	log      *slog.Logger
	reg      *prometheus.Registry
	m        *metrics
	sem      chan struct{} // produce permits; nil: unlimited
	shutting atomic.Bool

	patterns  map[string]*pattern // the fixed paths; topic paths are matched in match
	topicPats [5]*pattern         // indexed by topicSub
	userPats  [3]*pattern         // indexed by subUser…
	forgetPat *pattern            // /v1/cluster/members/{id}/forget
	decomPat  *pattern            // /v1/cluster/members/{id}/decommission
	abortPat  *pattern            // /v1/cluster/moves/{topic}/{partition}/abort
	notFound  *route
	promH     http.Handler
	handler   http.Handler
	// checkAnswer, when set (by tests), sees every answer with the route that served it.
	checkAnswer func(r *http.Request, rt *route, status int)
}

// handlerFunc serves one request. It either writes a response and returns its status, or
// writes nothing and returns an error, which the server maps to a status (errors.go).
type handlerFunc func(w http.ResponseWriter, r *http.Request, topic string) (int, error)

// route is one (method, pattern): its handler, what it needs of the caller, and its
// cached metric children.
type route struct {
	h        handlerFunc
	perm     perm
	rm       *routeMetrics
	statuses []int // every status it can answer (routes.go), sorted
}

// pattern is one path with the routes of its methods.
type pattern struct {
	methods    map[string]*route
	allow      []string // the methods, in routeTable's order
	notAllowed *route   // answers 405 with the Allow header
}

// New returns a Server that serves b.
func New(b Broker, opts Options) *Server {
	s := &Server{b: b, log: opts.Logger, reg: opts.Registry, auth: opts.Auth}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if opts.InFlightMax > 0 {
		s.sem = make(chan struct{}, opts.InFlightMax)
	}
	s.m = newMetrics(s.reg)
	s.promH = promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
	s.buildRoutes()
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s
}

// Handler returns the http.Handler serving every route of API.md.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the registry the metrics are registered on.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// BeginShutdown makes /healthz and /readyz answer 503 and every /v1 route answer 503
// "node shutting down". Requests already being served finish as they would have.
func (s *Server) BeginShutdown() { s.shutting.Store(true) }

// The sub-resources of /v1/topics/{topic}.
const (
	subTopic = iota
	subProduce
	subProduceBatch
	subConsume
	subAck
)

// buildRoutes registers routeTable: one pattern per path with the routes of its methods,
// and the patterns of the paths with parameters in the slots match reaches them by. A
// row that match cannot reach, or a slot without its row, is a programmer error.
func (s *Server) buildRoutes() {
	byPath := map[string]*pattern{}
	var paths []string
	for i := range routeTable {
		spec := &routeTable[i]
		p := byPath[spec.path]
		if p == nil {
			p = &pattern{methods: map[string]*route{}}
			byPath[spec.path] = p
			paths = append(paths, spec.path)
		}
		h := spec.h
		p.methods[spec.method] = &route{perm: spec.perm, statuses: statusesOf(spec),
			rm: s.m.route(spec.method + " " + spec.path),
			h: func(w http.ResponseWriter, r *http.Request, arg string) (int, error) {
				return h(s, w, r, arg)
			}}
		p.allow = append(p.allow, spec.method)
	}
	s.patterns = map[string]*pattern{}
	for _, path := range paths {
		s.finishPattern(path, byPath[path])
		if !strings.Contains(path, "{") {
			s.patterns[path] = byPath[path]
			delete(byPath, path)
		}
	}
	take := func(path string) *pattern {
		p, ok := byPath[path]
		if !ok {
			panic("httpapi: routeTable has no route on " + path)
		}
		delete(byPath, path)
		return p
	}
	s.topicPats = [5]*pattern{subTopic: take(tPath), subProduce: take(tPath + "/produce"),
		subProduceBatch: take(tPath + "/produce/batch"), subConsume: take(tPath + "/consume"),
		subAck: take(tPath + "/ack")}
	s.userPats = [3]*pattern{subUser: take(uPath), subUserGrants: take(uPath + "/grants"),
		subUserPassword: take(uPath + "/password")}
	s.forgetPat = take("/v1/cluster/members/{id}/forget")
	s.decomPat = take("/v1/cluster/members/{id}/decommission")
	s.abortPat = take("/v1/cluster/moves/{topic}/{partition}/abort")
	if len(byPath) > 0 {
		panic(fmt.Sprintf("httpapi: match does not reach the routes of %v", slices.Sorted(maps.Keys(byPath))))
	}
	s.notFound = &route{h: notFoundHandler, rm: s.m.route("unmatched"),
		statuses: []int{http.StatusNotFound, http.StatusServiceUnavailable}}
}

// finishPattern gives p its 405 route. A route's metric label is Go's ServeMux pattern
// syntax, "METHOD /path/{topic}"; a 405 is counted under the bare path.
func (s *Server) finishPattern(path string, p *pattern) {
	allowHeader := strings.Join(p.allow, ", ")
	p.notAllowed = &route{rm: s.m.route(path), h: func(w http.ResponseWriter, _ *http.Request, _ string) (int, error) {
		w.Header().Set("Allow", allowHeader)
		return 0, errMethodNotAllowed
	}, statuses: []int{http.StatusMethodNotAllowed}}
	if isV1(path) {
		p.notAllowed.statuses = append(p.notAllowed.statuses, http.StatusServiceUnavailable)
	}
}

// match finds the pattern of path and the topic name in it (not yet validated).
func (s *Server) match(path string) (*pattern, string) {
	if p, ok := s.patterns[path]; ok {
		return p, ""
	}
	if rest, ok := strings.CutPrefix(path, "/v1/users/"); ok {
		return s.matchUser(rest)
	}
	if rest, ok := strings.CutPrefix(path, "/v1/cluster/members/"); ok {
		return s.matchMember(rest)
	}
	if rest, ok := strings.CutPrefix(path, "/v1/cluster/moves/"); ok {
		return s.matchMove(rest)
	}
	rest, ok := strings.CutPrefix(path, "/v1/topics/")
	if !ok {
		return nil, ""
	}
	topic, sub, hasSub := strings.Cut(rest, "/")
	if topic == "" {
		return nil, ""
	}
	if !hasSub {
		return s.topicPats[subTopic], topic
	}
	switch sub {
	case "produce":
		return s.topicPats[subProduce], topic
	case "produce/batch":
		return s.topicPats[subProduceBatch], topic
	case "consume":
		return s.topicPats[subConsume], topic
	case "ack":
		return s.topicPats[subAck], topic
	}
	return nil, ""
}

// serveHTTP routes a request, runs its handler, answers its error if it returned one, and
// records the request's metrics and log line.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	path := r.URL.Path
	p, topic := s.match(path)
	rt := s.notFound
	if p != nil {
		rt = p.methods[r.Method]
		if rt == nil {
			rt = p.notAllowed
		}
	}
	var status int
	var err error
	if s.shutting.Load() && isV1(path) {
		err = node.ErrShuttingDown
	} else if r, err = s.authorize(w, r, rt.perm, topic); err == nil {
		if rt.perm != permOpen && needsBodyType(r) && !contentTypeOK(r.Header) {
			err = errContentType
		} else {
			status, err = rt.h(w, r, topic)
		}
	}
	if err != nil {
		status = writeError(w, err)
	}
	if s.checkAnswer != nil {
		s.checkAnswer(r, rt, status)
	}
	s.finish(r, rt, status, err, time.Since(start))
}

// finish records one request in the metrics and the log. A 5xx is a warning unless the
// client went away first (a long poll given up, a produce timed out by the client) or the
// node only said what state it is in (503 while it recovers or shuts down: every
// readiness probe and every request of a drain would log one), or refused a produce for a
// full device (507: every produce would log one while /metrics shows narad_wal_no_space):
// the server did not fail then, and such lines would drown the real failures.
func (s *Server) finish(r *http.Request, rt *route, status int, err error, took time.Duration) {
	rt.rm.observe(status, took)
	ctx := r.Context()
	if status >= 500 && ctx.Err() == nil && !errors.Is(err, node.ErrShuttingDown) && !errors.Is(err, node.ErrNotReady) &&
		!errors.Is(err, node.ErrNoSpace) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "http request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", rt.rm.label),
			slog.Int("status", status), slog.Duration("took", took), slog.Any("err", err))
		return
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.LogAttrs(ctx, slog.LevelDebug, "http request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", rt.rm.label),
			slog.Int("status", status), slog.Duration("took", took), slog.Any("err", err))
	}
}

func notFoundHandler(http.ResponseWriter, *http.Request, string) (int, error) {
	return 0, errNotFound
}

// healthz answers 200 while the process serves, 503 once shutdown began.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ string) (int, error) {
	if s.shutting.Load() {
		return 0, node.ErrShuttingDown
	}
	return writeJSONBytes(w, http.StatusOK, statusOKBody), nil
}

// Ready is nil once the node serves requests as /readyz says: the broker is ready and,
// with security on, its replica holds a user.
func (s *Server) Ready() error {
	if err := s.b.Ready(); err != nil {
		return err
	}
	return s.usersReady()
}

// readyz answers 200 once the broker is ready, else 503 with the reason.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request, _ string) (int, error) {
	if s.shutting.Load() {
		return 0, node.ErrShuttingDown
	}
	if err := s.b.Ready(); err != nil {
		return 0, &apiError{status: http.StatusServiceUnavailable, msg: err.Error(), cause: err}
	}
	if err := s.usersReady(); err != nil {
		return 0, err
	}
	return writeJSONBytes(w, http.StatusOK, statusOKBody), nil
}

// metricsPage serves the registry in the Prometheus text format.
func (s *Server) metricsPage(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	s.promH.ServeHTTP(w, r)
	return http.StatusOK, nil
}

var statusOKBody = []byte(`{"status":"ok"}`)

// statusPage serves the status page (io/statusui). It holds no data, so it needs no
// credentials: its script reads the API with the viewer's.
func (s *Server) statusPage(w http.ResponseWriter, _ *http.Request, _ string) (int, error) {
	statusui.Serve(w)
	return http.StatusOK, nil
}

func (s *Server) toStatusPage(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	http.Redirect(w, r, statusui.Path, http.StatusMovedPermanently)
	return http.StatusMovedPermanently, nil
}
