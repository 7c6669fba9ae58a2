package api_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/narad/narad/api"
	"github.com/narad/narad/io/httpapi"
)

// load parses and validates the served document (the JSON converted from openapi.yaml).
func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.JSON())
	if err != nil {
		t.Fatalf("load the document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	return doc
}

// TestDocumentListsWhatTheServerServes is the completeness test: the document's
// operations are exactly httpapi's routes on the paths it is about (Describes), and each
// one lists exactly the statuses its route declares (routes.go, which the server registers
// and its tests hold the handlers to).
func TestDocumentListsWhatTheServerServes(t *testing.T) {
	doc := load(t)
	inDoc := map[string][]int{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			if !api.Describes(path) {
				t.Errorf("%s: a path the document is not about (api.Describes)", key)
			}
			if op.Responses.Default() != nil {
				t.Errorf("%s: a default response hides which statuses the route answers", key)
			}
			for code := range op.Responses.Map() {
				n, err := strconv.Atoi(code)
				if err != nil {
					t.Errorf("%s: response %q is not a status code", key, code)
					continue
				}
				inDoc[key] = append(inDoc[key], n)
			}
			slices.Sort(inDoc[key])
			checkSecurity(t, doc, key, op)
		}
	}
	served := map[string][]int{}
	for _, r := range httpapi.Routes() {
		if api.Describes(r.Path) {
			served[r.Method+" "+r.Path] = r.Statuses
		}
	}
	for _, key := range slices.Sorted(maps.Keys(served)) {
		doc, ok := inDoc[key]
		if !ok {
			t.Errorf("%s is served but not in the document", key)
			continue
		}
		if missing := minus(served[key], doc); len(missing) > 0 {
			t.Errorf("%s answers %v, which the document does not list", key, missing)
		}
		if extra := minus(doc, served[key]); len(extra) > 0 {
			t.Errorf("%s: the document lists %v, which the server does not declare", key, extra)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(inDoc)) {
		if _, ok := served[key]; !ok {
			t.Errorf("%s is in the document but not served", key)
		}
	}
}

// checkSecurity holds an operation's security to its statuses: a route that may answer
// 401 needs HTTP Basic (the document's default), one that never does is open.
func checkSecurity(t *testing.T, doc *openapi3.T, key string, op *openapi3.Operation) {
	t.Helper()
	sec := doc.Security
	if op.Security != nil {
		sec = *op.Security
	}
	basic := len(sec) == 1 && len(sec[0]) == 1 && sec[0]["basicAuth"] != nil
	if needs := op.Responses.Status(401) != nil; needs != basic {
		t.Errorf("%s: answers 401 is %v, but HTTP Basic required is %v", key, needs, basic)
	}
}

// minus returns the elements of a that are not in b.
func minus(a, b []int) []int {
	var out []int
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestYAMLAndJSONAgree checks that the served JSON is the YAML source: both load to the
// same document.
func TestYAMLAndJSONAgree(t *testing.T) {
	fromJSON := load(t)
	fromYAML, err := openapi3.NewLoader().LoadFromData(api.YAML())
	if err != nil {
		t.Fatalf("load the YAML source: %v", err)
	}
	a, err := fromJSON.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b, err := fromYAML.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("the JSON and the YAML documents differ")
	}
}

func ExampleJSON() {
	doc := string(api.JSON())
	fmt.Println(strings.HasPrefix(doc, "{"), strings.Contains(doc, `"openapi":"3.1.0"`))
	// Output: true true
}
