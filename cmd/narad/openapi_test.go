package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/narad/narad/api"
)

// Every request a testDaemon's client sends, and its answer, is checked against the
// OpenAPI document the daemon serves (api/openapi.yaml), so the end-to-end tests hold the
// server to its description:
//
//   - the answer must be one the document lists for the operation (status, headers, body
//     schema), or, on a path or method the document does not have, a 404 or 405 (503 on a
//     /v1 path during a shutdown) with the API's error body;
//   - a request the document refuses (a parameter, a body, credentials) must not be
//     answered with a success: the document would be stricter than the server.
//
// A failed check fails the test that sent the request.

// openapiRouter loads the document and its router once for every test of the package.
var openapiRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.JSON())
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	if err := no31OnlyKeywords(api.JSON()); err != nil {
		return nil, err
	}
	// openapi3filter checks a 3.1 document with a JSON Schema 2020-12 validator that it
	// compiles anew for every value it checks (about 2 ms an exchange under the race
	// detector, and these tests make thousands); its own validator, which it uses for 3.0,
	// keeps what it compiles. The document uses no keyword whose meaning differs between
	// the two (no31OnlyKeywords), so the checks are the same, at a fraction of the cost.
	doc.OpenAPI = "3.0.3"
	return gorillamux.NewRouter(doc)
})

// no31OnlyKeywords fails if the document uses a JSON Schema keyword that openapi3filter's
// OpenAPI 3.0 validator would ignore. (Type arrays with "null" it does check.)
func no31OnlyKeywords(doc []byte) error {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return err
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				switch k {
				case "const", "prefixItems", "if", "then", "else", "dependentRequired", "dependentSchemas",
					"unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames", "$defs",
					"exclusiveMinimum", "exclusiveMaximum", "patternProperties":
					return errors.New("the document uses " + k + ", which the validator of these tests ignores")
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range v {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v)
}

// validating wraps next so that every exchange is checked against the document; secured
// is false for a daemon with access control off (-dev), which needs no credentials.
func validating(t *testing.T, next http.RoundTripper, secured bool) *validatingTransport {
	t.Helper()
	router, err := openapiRouter()
	if err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	v := &validatingTransport{t: t, next: next, router: router, auth: basicPresent}
	if !secured {
		v.auth = openapi3filter.NoopAuthenticationFunc
	}
	return v
}

type validatingTransport struct {
	t      *testing.T
	next   http.RoundTripper
	router routers.Router
	auth   openapi3filter.AuthenticationFunc
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the wrapped transport.
func (v *validatingTransport) CloseIdleConnections() {
	if c, ok := v.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, bodyKnown := requestBody(req)
	resp, err := v.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil { // the connection broke (a crash test): pass on what came, unchecked
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if msg := v.check(req, body, bodyKnown, resp, b); msg != "" {
		v.t.Errorf("OpenAPI: %s %s answered %d %q: %s", req.Method, req.URL.RequestURI(), resp.StatusCode,
			truncateBody(b), msg)
	}
	return resp, nil
}

// requestBody returns a copy of req's body when it can be had without consuming it
// (http.NewRequest sets GetBody for in-memory bodies); known is false otherwise, and the
// body then goes unchecked.
func requestBody(req *http.Request) (body []byte, known bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	body, err = io.ReadAll(rc)
	return body, err == nil
}

// check returns what is wrong with one exchange, or "". Paths outside the API (the
// document's /v1 and its operations routes), such as a status page, are not checked.
func (v *validatingTransport) check(req *http.Request, body []byte, bodyKnown bool, resp *http.Response, respBody []byte) string {
	if !api.Describes(req.URL.Path) {
		return ""
	}
	ctx := context.Background()
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return checkUnrouted(req, err, resp, respBody)
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true, // a status the operation does not list is an error
		SkipSettingDefaults:   true,
		ExcludeRequestBody:    !bodyKnown,
		AuthenticationFunc:    v.auth,
	}
	in := &openapi3filter.RequestValidationInput{Request: req.Clone(ctx), PathParams: params, Route: route, Options: opts}
	in.Request.Body = io.NopCloser(bytes.NewReader(body))
	in.Request.GetBody = nil
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
		Header: resp.Header, Options: opts}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return "the answer does not match the document: " + err.Error()
	}
	if reqErr != nil && resp.StatusCode < 400 {
		return "the document refuses this request, which the server accepted: " + reqErr.Error()
	}
	return ""
}

// checkUnrouted checks the answer to a request the document has no operation for.
func checkUnrouted(req *http.Request, routeErr error, resp *http.Response, respBody []byte) string {
	status := resp.StatusCode
	v1 := strings.HasPrefix(req.URL.Path, "/v1/")
	switch {
	case status == http.StatusMethodNotAllowed && errors.Is(routeErr, routers.ErrMethodNotAllowed):
		if resp.Header.Get("Allow") == "" {
			return "a 405 without an Allow header"
		}
	case status == http.StatusNotFound && errors.Is(routeErr, routers.ErrPathNotFound):
	case status == http.StatusServiceUnavailable && v1:
	default:
		return "no operation of the document serves it (" + routeErr.Error() + ")"
	}
	var e struct {
		Error string `json:"error"`
	}
	if resp.Header.Get("Content-Type") != "application/json" || strictDecode(respBody, &e) != nil || e.Error == "" {
		return `the answer is not the API's error {"error":"…"}`
	}
	return ""
}

// basicPresent is the document's basicAuth scheme as a validator sees it: the request
// carries HTTP Basic credentials (whether they are right is the server's to say).
func basicPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if _, _, ok := in.RequestValidationInput.Request.BasicAuth(); !ok {
		return errors.New("no HTTP Basic credentials")
	}
	return nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func truncateBody(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// testOpenAPIServed (in TestE2E) checks GET /v1/openapi.json and /v1/openapi.yaml: the
// embedded document, for any user, and 401 without credentials.
func testOpenAPIServed(d *testDaemon) {
	t := d.t
	r := d.expect(http.StatusOK, http.MethodGet, "/v1/openapi.json", nil, nil)
	if !bytes.Equal(r.body, api.JSON()) || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("/v1/openapi.json: %s, %d bytes, want the embedded document", r.header.Get("Content-Type"), len(r.body))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("/v1/openapi.json: openapi %q (%v)", doc.OpenAPI, err)
	}
	r = d.expect(http.StatusOK, http.MethodGet, "/v1/openapi.yaml", nil, nil)
	if !bytes.Equal(r.body, api.YAML()) {
		t.Fatalf("/v1/openapi.yaml is not the embedded source")
	}
	d.expect(http.StatusUnauthorized, http.MethodGet, "/v1/openapi.json", map[string]string{"Authorization": "-"}, nil)
}
