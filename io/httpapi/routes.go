package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/narad/narad/api"
	"github.com/narad/narad/io/statusui"
)

// The route table: every (method, path) the server serves, with its handler, what it
// needs of the caller, and every status it can answer. buildRoutes registers exactly
// these, so what is served cannot drift from what is declared; the tests check that every
// status a handler answers is declared (fixture.checkAnswer), and the api package's test
// that api/openapi.yaml lists the same routes with the same statuses (Routes).
//
// A route's statuses are those its row lists plus those that follow from its perm and
// method (statusesOf): with credentials 401, 429 (failed logins) and 503 (no user yet);
// with a grant to check 403; under /v1 503 (shutting down); a write with a body 415.
type routeSpec struct {
	method, path string // path in Go's ServeMux pattern syntax, as openapi.yaml's paths
	perm         perm
	h            func(*Server, http.ResponseWriter, *http.Request, string) (int, error)
	statuses     []int
}

const (
	tPath = "/v1/topics/{topic}"
	uPath = "/v1/users/{name}"
)

// brokerFails are the statuses of every route that calls the broker: an unexpected or a
// storage failure (500), and a node not ready, a lost quorum or a deadline (503).
var brokerFails = []int{500, 503}

var routeTable = []routeSpec{
	{"GET", "/healthz", permOpen, (*Server).healthz, []int{200, 503}},
	{"GET", "/readyz", permOpen, (*Server).readyz, []int{200, 503}},
	{"GET", "/metrics", permUser, (*Server).metricsPage, []int{200}},
	{"GET", statusui.Path, permOpen, (*Server).statusPage, []int{200}},
	{"GET", statusui.PathNoSlash, permOpen, (*Server).toStatusPage, []int{301}},
	{"GET", "/v1/openapi.json", permUser, (*Server).openapiJSON, []int{200}},
	{"GET", "/v1/openapi.yaml", permUser, (*Server).openapiYAML, []int{200}},
	{"GET", "/v1/topics", permUser, (*Server).listTopics, with(brokerFails, 200, 400)},
	{"POST", "/v1/topics", permUser, (*Server).createTopic, with(brokerFails, 201, 400, 403, 409, 413)},
	{"GET", tPath, permSee, (*Server).getTopic, with(brokerFails, 200, 400, 404)},
	{"PATCH", tPath, permCreate, (*Server).patchTopic, with(brokerFails, 200, 400, 404, 413)},
	{"DELETE", tPath, permCreate, (*Server).deleteTopic, with(brokerFails, 204, 400, 404)},
	{"POST", tPath + "/produce", permProduce, (*Server).produce, with(brokerFails, 202, 400, 404, 413, 507)},
	{"POST", tPath + "/produce/batch", permProduce, (*Server).produceBatch, with(brokerFails, 202, 400, 404, 413, 507)},
	{"GET", tPath + "/consume", permConsume, (*Server).consume, with(brokerFails, 200, 204, 400, 404, 410)},
	{"POST", tPath + "/ack", permConsume, (*Server).ack, with(brokerFails, 200, 204, 400, 404, 410, 413)},
	{"GET", "/v1/users", permAdmin, (*Server).listUsers, with(brokerFails, 200)},
	{"POST", "/v1/users", permAdmin, (*Server).createUser, with(brokerFails, 201, 400, 409, 413)},
	{"GET", uPath, permUser, (*Server).getUser, with(brokerFails, 200, 403, 404)},
	{"DELETE", uPath, permAdmin, (*Server).deleteUser, with(brokerFails, 204, 404)},
	{"PUT", uPath + "/grants", permAdmin, (*Server).putGrants, with(brokerFails, 200, 400, 404, 413)},
	{"PUT", uPath + "/password", permUser, (*Server).putPassword, with(brokerFails, 204, 400, 403, 404, 413)},
	{"GET", "/v1/cluster/members", permAdmin, (*Server).members, with(brokerFails, 200)},
	{"POST", "/v1/cluster/members/{id}/forget", permAdmin, (*Server).forget, with(brokerFails, 200, 400, 404, 409)},
	{"POST", "/v1/cluster/members/{id}/decommission", permAdmin, (*Server).decommission,
		with(brokerFails, 200, 202, 400, 404, 409)},
	{"DELETE", "/v1/cluster/members/{id}/decommission", permAdmin, (*Server).cancelDecommission,
		with(brokerFails, 204, 400, 404, 409)},
	{"GET", "/v1/cluster/moves", permAdmin, (*Server).moves, with(brokerFails, 200)},
	{"POST", "/v1/cluster/moves", permAdmin, (*Server).startMove, with(brokerFails, 202, 400, 404, 409, 413)},
	{"POST", "/v1/cluster/moves/{topic}/{partition}/abort", permAdmin, (*Server).abortMove,
		with(brokerFails, 202, 400, 404)},
	{"POST", "/v1/cluster/rebalance", permAdmin, (*Server).rebalance, with(brokerFails, 202)},
}

func with(common []int, statuses ...int) []int { return append(slices.Clone(common), statuses...) }

// statusesOf returns every status spec's route can answer, sorted.
func statusesOf(spec *routeSpec) []int {
	out := slices.Clone(spec.statuses)
	if spec.perm != permOpen {
		out = append(out, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable)
	}
	if spec.perm != permOpen && spec.perm != permUser {
		out = append(out, http.StatusForbidden)
	}
	if isV1(spec.path) {
		out = append(out, http.StatusServiceUnavailable)
	}
	switch spec.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		if spec.perm != permOpen {
			out = append(out, http.StatusUnsupportedMediaType)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func isV1(path string) bool { return path == "/v1" || strings.HasPrefix(path, "/v1/") }

// Route is one route the server serves and every status it can answer.
type Route struct {
	Method   string
	Path     string // as in OpenAPI: /v1/topics/{topic}
	Statuses []int  // sorted
}

// Routes returns every route of the table, in its order. Beyond these, any path answers
// 404 when unknown and 405 (with Allow) for a method it does not serve, and every /v1
// path 503 from the start of a shutdown.
func Routes() []Route {
	out := make([]Route, len(routeTable))
	for i := range routeTable {
		spec := &routeTable[i]
		out[i] = Route{Method: spec.method, Path: spec.path, Statuses: statusesOf(spec)}
	}
	return out
}

// openapiJSON serves GET /v1/openapi.json: the API's OpenAPI document.
func (s *Server) openapiJSON(w http.ResponseWriter, _ *http.Request, _ string) (int, error) {
	return writeJSONBytes(w, http.StatusOK, api.JSON()), nil
}

// openapiYAML serves GET /v1/openapi.yaml: the document's source.
func (s *Server) openapiYAML(w http.ResponseWriter, _ *http.Request, _ string) (int, error) {
	b := api.YAML()
	h := w.Header()
	h["Content-Type"] = yamlContentType
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return http.StatusOK, nil
}

var yamlContentType = []string{"application/yaml"}
