package detcheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"
)

// A banned function of an allowed package: referring to it at all is the violation.
type banned struct {
	rule, why string
}

var bannedFuncs = map[string]map[string]banned{
	"time": {
		"Now":       {RuleTime, "reads the wall clock: time arrives in events"},
		"Since":     {RuleTime, "reads the wall clock: time arrives in events"},
		"Until":     {RuleTime, "reads the wall clock: time arrives in events"},
		"Sleep":     {RuleTime, "blocks on the real clock: timers are actions"},
		"After":     {RuleTime, "starts a real timer: timers are actions"},
		"AfterFunc": {RuleTime, "starts a real timer: timers are actions"},
		"NewTimer":  {RuleTime, "starts a real timer: timers are actions"},
		"NewTicker": {RuleTime, "starts a real timer: timers are actions"},
		"Tick":      {RuleTime, "starts a real timer: timers are actions"},
	},
	"maps": {
		"Keys":   {RuleMapRange, "yields in random order: use slices.Sorted(maps.Keys(m))"},
		"Values": {RuleMapRange, "yields in random order: sort the result (slices.Sorted)"},
		"All":    {RuleMapRange, "yields in random order: iterate sorted keys"},
	},
}

// sortingFuncs are the slices functions whose result does not depend on the order in which
// their iterator argument yields.
var sortingFuncs = map[string]bool{"Sorted": true, "SortedFunc": true, "SortedStableFunc": true}

// deniedImport returns why path may not be imported by core code, or "".
func deniedImport(path string) string {
	under := func(prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }
	switch {
	case under("sync"):
		return "no locks or atomics: the core is single-threaded"
	case under("os"), under("net"), under("syscall"), under("golang.org/x/sys"), path == "io/ioutil":
		return "no I/O: the core emits actions and the shell performs them"
	case path == "math/rand", path == "math/rand/v2", path == "crypto/rand":
		return "no global randomness: use the seeded core/rng source passed in"
	case path == "hash/maphash":
		return "maphash seeds are random per process"
	case path == "unsafe":
		return "unsafe code is not allowed in core"
	case under("runtime"):
		return "scheduler and GC state differ between runs"
	}
	return ""
}

// defaultName is the name an import is known by without an explicit name.
func defaultName(path string) string {
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		last = elems[len(elems)-2]
	}
	return last
}

// fileScan checks one file.
type fileScan struct {
	c           *checker
	file        *srcFile
	info        *types.Info       // nil when the file was not type-checked
	imports     map[string]string // local package name → import path
	dots        map[string]bool   // dot-imported paths
	sortedLines map[int]bool      // lines holding SortedMarker
	sortedArgs  map[ast.Expr]bool // calls whose iterator a slices.Sorted* call consumes
	called      map[ast.Expr]bool // function expressions already checked as called
}

func (c *checker) scanFile(p *pkg, f *srcFile) {
	s := &fileScan{
		c:           c,
		file:        f,
		imports:     make(map[string]string),
		dots:        make(map[string]bool),
		sortedLines: make(map[int]bool),
		sortedArgs:  make(map[ast.Expr]bool),
		called:      make(map[ast.Expr]bool),
	}
	if f.typed {
		s.info = p.info
	}
	for _, cg := range f.ast.Comments {
		for _, cm := range cg.List {
			if strings.HasPrefix(cm.Text, SortedMarker) || strings.HasPrefix(cm.Text, UnorderedMarker) {
				s.sortedLines[s.line(cm.Pos())] = true
			}
			if strings.HasPrefix(cm.Text, "//go:linkname") {
				s.report(cm.Pos(), RuleLinkname, "//go:linkname reaches into another package's internals")
			}
		}
	}
	for _, imp := range f.ast.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if why := deniedImport(path); why != "" {
			s.report(imp.Pos(), RuleImport, fmt.Sprintf("import of %q: %s", path, why))
		}
		name := defaultName(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch name {
		case "_":
		case ".":
			s.dots[path] = true
		default:
			s.imports[name] = path
		}
	}
	ast.Inspect(f.ast, s.visit)
}

func (s *fileScan) line(pos token.Pos) int { return s.c.fset.Position(pos).Line }

func (s *fileScan) report(pos token.Pos, rule, text string) {
	position := s.c.fset.Position(pos)
	s.c.violations = append(s.c.violations, Violation{
		File: s.c.display(position.Filename),
		Line: position.Line,
		Rule: rule,
		Text: text,
	})
}

// sorted reports whether a SortedMarker covers a construct starting at pos.
func (s *fileScan) sorted(pos token.Pos) bool {
	l := s.line(pos)
	return s.sortedLines[l] || s.sortedLines[l-1]
}

func (s *fileScan) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		s.report(n.Pos(), RuleGo, "go statement: the core starts no goroutines")
	case *ast.ChanType:
		s.report(n.Pos(), RuleChan, "channel type "+types.ExprString(n))
	case *ast.SendStmt:
		s.report(n.Pos(), RuleChan, "channel send on "+types.ExprString(n.Chan))
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			s.report(n.Pos(), RuleChan, "channel receive from "+types.ExprString(n.X))
		}
	case *ast.SelectStmt:
		s.report(n.Pos(), RuleChan, "select statement")
	case *ast.RangeStmt:
		s.checkRange(n)
	case *ast.CallExpr:
		s.checkCall(n)
	case *ast.SelectorExpr:
		if path, ok := s.qualified(n); ok {
			s.checkRef(n, path, n.Sel.Name)
		}
		// Sel names a field, method or package member, never a dot-imported name.
		ast.Inspect(n.X, s.visit)
		return false
	case *ast.Ident:
		if path, ok := s.dotted(n); ok {
			s.checkRef(n, path, n.Name)
		}
	}
	return true
}

// qualified returns the import path of the package sel.X names, if it names one.
func (s *fileScan) qualified(sel *ast.SelectorExpr) (string, bool) {
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	if s.info != nil {
		if obj, ok := s.info.Uses[x]; ok {
			if pn, ok := obj.(*types.PkgName); ok {
				return pn.Imported().Path(), true
			}
			return "", false
		}
	}
	// Without types, the parser's object resolution is the scope information there is.
	if x.Obj != nil { // a declaration in this file shadows the import
		return "", false
	}
	path, ok := s.imports[x.Name]
	return path, ok
}

// dotted returns the import path of the dot-imported package id refers to, if any.
func (s *fileScan) dotted(id *ast.Ident) (string, bool) {
	if len(s.dots) == 0 {
		return "", false
	}
	if s.info != nil {
		if obj, ok := s.info.Uses[id]; ok {
			if p := obj.Pkg(); p != nil && s.dots[p.Path()] && obj.Parent() == p.Scope() {
				return p.Path(), true
			}
			return "", false
		}
	}
	if id.Obj != nil {
		return "", false
	}
	for _, path := range []string{"time", "maps", "slices"} {
		_, isBanned := bannedFuncs[path][id.Name]
		if s.dots[path] && (isBanned || path == "slices" && sortingFuncs[id.Name]) {
			return path, true
		}
	}
	return "", false
}

// funcOf returns the package and name of the package-level function fun refers to.
func (s *fileScan) funcOf(fun ast.Expr) (path, name string, ok bool) {
	switch f := ast.Unparen(fun).(type) {
	case *ast.SelectorExpr:
		path, ok = s.qualified(f)
		return path, f.Sel.Name, ok
	case *ast.Ident:
		path, ok = s.dotted(f)
		return path, f.Name, ok
	}
	return "", "", false
}

func (s *fileScan) checkCall(call *ast.CallExpr) {
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok && id.Name == "close" && s.isBuiltin(id) {
		s.report(call.Pos(), RuleChan, "close of channel "+exprList(call.Args))
		return
	}
	path, name, ok := s.funcOf(call.Fun)
	if !ok {
		return
	}
	if path == "slices" && sortingFuncs[name] && len(call.Args) > 0 {
		s.sortedArgs[ast.Unparen(call.Args[0])] = true
	}
	if b, ok := bannedFuncs[path][name]; ok && b.rule == RuleMapRange {
		// maps.Keys(m) is fine where a sort consumes it, or under the marker.
		s.called[ast.Unparen(call.Fun)] = true
		if !s.sortedArgs[call] && !s.sorted(call.Pos()) {
			s.report(call.Pos(), b.rule, fmt.Sprintf("%s %s", spelled(ast.Unparen(call.Fun), path, name), b.why))
		}
	}
}

// checkRef reports a reference to a banned function (called or not: a method value
// such as clock := time.Now reads the clock later just the same).
func (s *fileScan) checkRef(ref ast.Expr, path, name string) {
	b, ok := bannedFuncs[path][name]
	if !ok || s.called[ref] {
		return
	}
	if b.rule == RuleMapRange && s.sorted(ref.Pos()) {
		return
	}
	s.report(ref.Pos(), b.rule, fmt.Sprintf("%s %s", spelled(ref, path, name), b.why))
}

// spelled names a reference as written and, when an alias or a dot import hides it, as
// the package function it is.
func spelled(ref ast.Expr, path, name string) string {
	full := path + "." + name
	if src := types.ExprString(ref); src != full {
		return src + " (" + full + ")"
	}
	return full
}

func (s *fileScan) isBuiltin(id *ast.Ident) bool {
	if s.info != nil {
		if obj, ok := s.info.Uses[id]; ok {
			_, ok := obj.(*types.Builtin)
			return ok
		}
	}
	return id.Obj == nil
}

func (s *fileScan) checkRange(r *ast.RangeStmt) {
	what := types.ExprString(r.X)
	if t := s.typeOf(r.X); t != nil {
		switch {
		case underIs(t, isChan):
			s.report(r.Pos(), RuleChan, "range over channel "+what)
		case underIs(t, isMap) && !s.sorted(r.For):
			s.report(r.Pos(), RuleMapRange, fmt.Sprintf("range over map %s (type %s) in random order: sort the keys and mark the loop %s", what, t, SortedMarker))
		}
		return
	}
	if syntacticMap(r.X, 0) && !s.sorted(r.For) {
		s.report(r.Pos(), RuleMapRange, fmt.Sprintf("range over map %s in random order: sort the keys and mark the loop %s", what, SortedMarker))
	}
}

// typeOf returns the type go/types inferred for x, or nil if it has none.
func (s *fileScan) typeOf(x ast.Expr) types.Type {
	if s.info == nil {
		return nil
	}
	tv, ok := s.info.Types[x]
	if !ok || tv.Type == nil {
		return nil
	}
	if b, ok := tv.Type.(*types.Basic); ok && b.Kind() == types.Invalid {
		return nil
	}
	return tv.Type
}

func isMap(t types.Type) bool  { _, ok := t.(*types.Map); return ok }
func isChan(t types.Type) bool { _, ok := t.(*types.Chan); return ok }

// underIs applies pred to t's underlying type or, for a type parameter, to the underlying
// types of its constraint's terms, and reports whether any satisfies it.
func underIs(t types.Type, pred func(types.Type) bool) bool {
	if tp, ok := types.Unalias(t).(*types.TypeParam); ok {
		return termsAny(tp.Underlying(), pred, 0)
	}
	return pred(t.Underlying())
}

func termsAny(t types.Type, pred func(types.Type) bool, depth int) bool {
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return pred(t.Underlying())
	}
	if depth > 8 {
		return false
	}
	for i := 0; i < iface.NumEmbeddeds(); i++ {
		switch e := iface.EmbeddedType(i).(type) {
		case *types.Union:
			for j := 0; j < e.Len(); j++ {
				if termsAny(e.Term(j).Type(), pred, depth+1) {
					return true
				}
			}
		default:
			if termsAny(e, pred, depth+1) {
				return true
			}
		}
	}
	return false
}

// syntacticMap reports whether x is evidently a map without types: a map literal,
// make(map…), or an identifier this file declares with a map type or initial value.
func syntacticMap(x ast.Expr, depth int) bool {
	if depth > 8 {
		return false
	}
	switch x := ast.Unparen(x).(type) {
	case *ast.CompositeLit:
		return x.Type != nil && syntacticMapType(x.Type, depth+1)
	case *ast.CallExpr:
		fun, ok := ast.Unparen(x.Fun).(*ast.Ident)
		return ok && fun.Name == "make" && fun.Obj == nil && len(x.Args) > 0 && syntacticMapType(x.Args[0], depth+1)
	case *ast.Ident:
		if x.Obj == nil {
			return false
		}
		switch d := x.Obj.Decl.(type) {
		case *ast.Field:
			return syntacticMapType(d.Type, depth+1)
		case *ast.ValueSpec:
			if d.Type != nil {
				return syntacticMapType(d.Type, depth+1)
			}
			if i := identIndex(d.Names, x.Name); i >= 0 && len(d.Values) == len(d.Names) {
				return syntacticMap(d.Values[i], depth+1)
			}
		case *ast.AssignStmt:
			if d.Tok != token.DEFINE || len(d.Lhs) != len(d.Rhs) {
				return false
			}
			for i, l := range d.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == x.Name {
					return syntacticMap(d.Rhs[i], depth+1)
				}
			}
		}
	}
	return false
}

func syntacticMapType(t ast.Expr, depth int) bool {
	if depth > 8 {
		return false
	}
	switch t := ast.Unparen(t).(type) {
	case *ast.MapType:
		return true
	case *ast.IndexExpr: // an instance of a generic type
		return syntacticMapType(t.X, depth+1)
	case *ast.IndexListExpr:
		return syntacticMapType(t.X, depth+1)
	case *ast.Ident:
		if t.Obj != nil {
			if spec, ok := t.Obj.Decl.(*ast.TypeSpec); ok {
				return syntacticMapType(spec.Type, depth+1)
			}
		}
	}
	return false
}

func identIndex(ids []*ast.Ident, name string) int {
	for i, id := range ids {
		if id.Name == name {
			return i
		}
	}
	return -1
}

func exprList(xs []ast.Expr) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = types.ExprString(x)
	}
	return strings.Join(s, ", ")
}

// sortViolations sorts by file, line, rule and text and drops exact duplicates.
func sortViolations(vs []Violation) []Violation {
	sort.Slice(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Text < b.Text
	})
	out := vs[:0]
	for i, v := range vs {
		if i == 0 || v != vs[i-1] {
			out = append(out, v)
		}
	}
	return out
}
