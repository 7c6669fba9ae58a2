package stylecheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/narad/narad/internal/stylecheck"
)

// TestModule holds the whole module to the rules.
func TestModule(t *testing.T) {
	vs, err := stylecheck.Check("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestEveryRuleBites feeds each rule a file that breaks it, and one that keeps it.
func TestEveryRuleBites(t *testing.T) {
	body := func(n int) string { return strings.Repeat("\tx++\n", n) }
	longFunc := fmt.Sprintf("package p\n\nfunc f() {\n\tx := 0\n%s\t_ = x\n}\n", body(stylecheck.FuncLinesMax-1))
	okFunc := fmt.Sprintf("package p\n\nfunc f() {\n\tx := 0\n%s\t_ = x\n}\n", body(stylecheck.FuncLinesMax-2))
	wide := "package p\n\n// " + strings.Repeat("w", stylecheck.LineColumnsMax-2) + "\n"
	long := "package p\n" + strings.Repeat("\n", stylecheck.FileLinesMax)
	cases := []struct {
		name, path, src, want string
	}{
		{"long func", "io/x/a.go", longFunc, "func f of 71 lines"},
		{"func at the limit", "io/x/a.go", okFunc, ""},
		{"long test func", "io/x/a_test.go", longFunc, ""},
		{"wide core line", "core/x/a.go", wide, "line of 101 columns"},
		{"wide core test line", "core/x/a_test.go", wide, ""},
		{"wide line outside core", "sim/a.go", wide, ""},
		{"build line", "core/x/a.go", "//go:build " + strings.Repeat("a || ", 30) + "b\n\npackage p\n", ""},
		{"long file", "sim/a_test.go", long, "file of 701 lines"},
		{"private assert", "core/x/a.go", "package p\n\nfunc assert(ok bool) {}\n", "private assert"},
		{"assert outside core", "sim/a.go", "package p\n\nfunc assert(ok bool) {}\n", ""},
		{"core panic", "core/x/a.go", "package p\n\nfunc f() { panic(1) }\n", "a panic"},
		{"marked core panic", "core/x/a.go", "package p\n\nfunc f() { panic(1) } //narad:panic\n", ""},
		{"panic in core/assert", "core/assert/a.go", "package p\n\nfunc f() { panic(1) }\n", ""},
		{"broken source", "io/a.go", "package p\nfunc {", "does not parse"},
	}
	for _, c := range cases {
		vs := stylecheck.CheckFile(c.path, []byte(c.src))
		switch {
		case c.want == "" && len(vs) != 0:
			t.Errorf("%s: unexpected %v", c.name, vs)
		case c.want != "" && (len(vs) != 1 || !strings.Contains(string(vs[0]), c.want)):
			t.Errorf("%s: got %v, want one violation with %q", c.name, vs, c.want)
		}
	}
}
