package api

import (
	"strings"
	"testing"
)

// TestSourceConverts reports a source that does not convert as a failure rather than as
// JSON's panic.
func TestSourceConverts(t *testing.T) {
	if _, err := toJSON(source); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
}

func TestToJSON(t *testing.T) {
	cases := []struct{ yaml, json, err string }{
		{"a:\n  '200': x\n  b: [1, true, null]\n", `{"a":{"200":"x","b":[1,true,null]}}`, ""},
		{"a:\n  200: x\n", "", "quote it"},
		{"a: 1\na: 2\n", "", "already defined"},
		{"a: [b: {c: 1}]\n", `{"a":[{"b":{"c":1}}]}`, ""},
	}
	for _, c := range cases {
		got, err := toJSON([]byte(c.yaml))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one with %q", c.yaml, err, c.err)
		case c.err == "" && (err != nil || string(got) != c.json):
			t.Errorf("%q: %s, %v; want %s", c.yaml, got, err, c.json)
		}
	}
}
