// Package stylecheck enforces the measurable rules of ../shared/STYLE.md that no stock
// linter in `make lint` covers: functions under FuncLinesMax lines (point 10), files of at
// most FileLinesMax lines (point 10), core lines of at most LineColumnsMax columns, and one
// invariant helper (point 4: core/assert; in a core package no private assert and no panic
// call but on a line marked //narad:panic, as raft's logger contract asks). Its test runs
// it over the module; `make lint` runs errcheck, staticcheck and vet beside it.
package stylecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// The limits.
const (
	// FuncLinesMax bounds the lines of a function body (braces excluded) in non-test code.
	FuncLinesMax = 70
	// FileLinesMax bounds the lines of any Go file, tests included.
	FileLinesMax = 700
	// LineColumnsMax bounds the width of a non-test line under core/, a tab counting one
	// column (as golangci-lint's lll counts by default). A //go:build line is exempt.
	LineColumnsMax = 100
)

// Violation is one broken rule, as "path:line: message".
type Violation string

// Check walks the module rooted at root and returns every violation, in path order.
func Check(root string) ([]Violation, error) {
	var vs []Violation
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		vs = append(vs, CheckFile(filepath.ToSlash(rel), src)...)
		return nil
	})
	return vs, err
}

// CheckFile returns the violations of one file, whose path is relative to the module.
func CheckFile(rel string, src []byte) []Violation {
	var vs []Violation
	add := func(line int, format string, args ...any) {
		vs = append(vs, Violation(fmt.Sprintf("%s:%d: ", rel, line)+fmt.Sprintf(format, args...)))
	}
	test := strings.HasSuffix(rel, "_test.go")
	core := strings.HasPrefix(rel, "core/")
	lines := strings.Split(string(src), "\n")
	if n := len(lines) - 1; n > FileLinesMax {
		add(1, "file of %d lines, at most %d (split it by concept)", n, FileLinesMax)
	}
	if core && !test {
		for i, l := range lines {
			if w := utf8.RuneCountInString(l); w > LineColumnsMax && !strings.HasPrefix(l, "//go:build") {
				add(i+1, "line of %d columns, at most %d", w, LineColumnsMax)
			}
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		add(1, "does not parse: %v", err)
		return vs
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		line := fset.Position(fd.Pos()).Line
		n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
		if !test && n > FuncLinesMax {
			add(line, "func %s of %d lines, at most %d", fd.Name.Name, n, FuncLinesMax)
		}
		if core && fd.Recv == nil && fd.Name.Name == "assert" {
			add(line, "a private assert helper: state invariants with core/assert.That")
		}
	}
	if core && !test && !strings.HasPrefix(rel, "core/assert/") {
		ast.Inspect(f, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, isIdent := call.Fun.(*ast.Ident); isIdent && id.Name == "panic" {
				line := fset.Position(call.Pos()).Line
				if !strings.Contains(lines[line-1], "//narad:panic") {
					add(line, "a panic: state the invariant with core/assert")
				}
			}
			return true
		})
	}
	return vs
}
