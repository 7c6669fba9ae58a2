// Package api holds the OpenAPI 3.1 document of Narad's HTTP API (openapi.yaml beside this
// file): the routes of /work/shared/API.md with every parameter, body and status each one
// can answer. The daemon serves it at GET /v1/openapi.json (and its source at
// GET /v1/openapi.yaml); the end-to-end tests of cmd/narad check every answer against it,
// and this package's test that it lists exactly the routes and statuses io/httpapi
// declares.
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"go.yaml.in/yaml/v4"
)

// Describes reports whether path is one the document is about: /v1 and below, and the
// operations routes /healthz, /readyz and /metrics. Other paths a node may serve (a status
// page) are not part of the API it describes.
func Describes(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/v1":
		return true
	}
	return strings.HasPrefix(path, "/v1/")
}

// source is the document as written: YAML, so that it can carry comments and be read.
//
//go:embed openapi.yaml
var source []byte

// YAML returns the document's source. The caller must not change it.
func YAML() []byte { return source }

// JSON returns the document as JSON, converted once from the YAML source. The caller must
// not change it. It panics if the source does not convert, which the package's tests rule
// out before a build ships it.
func JSON() []byte { return jsonOnce() }

var jsonOnce = sync.OnceValue(func() []byte {
	b, err := toJSON(source)
	if err != nil {
		panic(fmt.Sprintf("api: openapi.yaml does not convert to JSON: %v", err))
	}
	return b
})

// toJSON converts a YAML document to JSON. Duplicate keys are an error; so are mapping
// keys that are not strings (a status code must be quoted: "200").
func toJSON(y []byte) ([]byte, error) {
	var v any
	if err := yaml.Load(y, &v, yaml.WithV4Defaults()); err != nil {
		return nil, err
	}
	if err := stringKeys(v, "$"); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// stringKeys checks that every mapping in v (as yaml.Load decodes into any) has string
// keys only, so that json.Marshal keeps every key.
func stringKeys(v any, at string) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if err := stringKeys(e, at+"."+k); err != nil {
				return err
			}
		}
	case map[any]any:
		for k := range v {
			if _, ok := k.(string); !ok {
				return fmt.Errorf("%s: mapping key %v (%T) is not a string; quote it", at, k, k)
			}
		}
		return fmt.Errorf("%s: a mapping that decoded with non-string keys", at)
	case []any:
		for i, e := range v {
			if err := stringKeys(e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
