// Package detcheck enforces the determinism rules of DESIGN.md section 2 on a tree of Go
// sources (in narad: core/). Same seed ⇒ same run only holds if no core code can observe
// the scheduler, the clock, the operating system or Go's randomised map order, so every
// non-test .go file under the root is checked for:
//
//	RuleGo       a go statement;
//	RuleChan     a channel type, send, receive, select, close of a channel, or range over one;
//	RuleImport   an import of sync…, os…, net…, syscall, golang.org/x/sys…, runtime…,
//	             math/rand, math/rand/v2, crypto/rand, hash/maphash, unsafe or io/ioutil;
//	RuleTime     a reference to time.Now, Since, Until, Sleep, After, AfterFunc, NewTimer,
//	             NewTicker or Tick (import aliases and dot imports honoured); the time
//	             package itself is allowed for Duration and its constants;
//	RuleMapRange a range over a map, or maps.Keys/Values/All outside slices.Sorted*,
//	             unless the line of the loop or the line before it carries //narad:sorted
//	             (the author collects the keys and sorts them; the check trusts it);
//	RuleLinkname a //go:linkname directive.
//
// Files ending in _test.go are exempt, and so are the directories the go tool ignores
// (testdata, and names starting with "." or "_").
//
// Most rules are syntactic. Finding a map range needs types, so each package directory is
// type-checked with go/types: packages of the enclosing module from source by the checker
// itself, the standard library and other modules by the "source" importer. A package that
// does not type-check (it may be mid-edit) is still checked: types are used wherever
// go/types could infer them, and elsewhere a range counts as a map range only when that is
// evident from the file alone (a map literal, make(map…), or an identifier declared in the
// same file with a map type). Parse and type errors are warnings, never violations, and a
// file that does not parse is still checked for what its partial syntax tree shows.
package detcheck

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The rules a Violation can name.
const (
	RuleGo       = "go"
	RuleChan     = "chan"
	RuleImport   = "import"
	RuleTime     = "time"
	RuleMapRange = "maprange"
	RuleLinkname = "linkname"
)

// SortedMarker exempts a map range on the same line or the line below from RuleMapRange:
// the author collects and sorts the keys.
const SortedMarker = "//narad:sorted"

// UnorderedMarker exempts a map range the same way: the author states that the order
// reaches no output (a sum, building another map, deleting entries).
const UnorderedMarker = "//narad:unordered"

// Violation is one place where a file breaks a rule.
type Violation struct {
	File string // the root passed to Check joined with the file's path below it
	Line int
	Rule string // one of the Rule constants
	Text string // what was found, and why it breaks determinism
}

func (v Violation) String() string {
	return fmt.Sprintf("%s:%d: [%s] %s", v.File, v.Line, v.Rule, v.Text)
}

// Check checks every non-test .go file under root and returns the violations, sorted by
// file and line. Warnings (files that do not parse, packages that do not type-check) are
// dropped; use CheckWarn to see them. The error is non-nil only when root cannot be read.
func Check(root string) ([]Violation, error) {
	return CheckWarn(root, nil)
}

// CheckWarn is Check, passing each warning to warn (which may be nil) as it is found.
func CheckWarn(root string, warn func(msg string)) ([]Violation, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(absRoot)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("detcheck: %s is not a directory", root)
	}
	if warn == nil {
		warn = func(string) {}
	}
	c := &checker{
		root:    root,
		absRoot: absRoot,
		fset:    token.NewFileSet(),
		pkgs:    make(map[string]*pkg),
		warn:    warn,
	}
	c.src = importer.ForCompiler(c.fset, "source", nil).(types.ImporterFrom)
	c.modPath, c.modDir = findModule(absRoot)

	dirs, err := c.sourceDirs()
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		p := c.load(dir)
		for _, f := range p.files {
			c.scanFile(p, f)
		}
	}
	return sortViolations(c.violations), nil
}

// checker holds the state of one Check run. It is not safe for concurrent use.
type checker struct {
	root, absRoot   string
	fset            *token.FileSet
	src             types.ImporterFrom // standard library and other modules, from source
	modPath, modDir string             // the module enclosing root; empty if none
	pkgs            map[string]*pkg    // by absolute directory
	warn            func(string)
	violations      []Violation
}

// pkg is one directory's non-test Go files, type-checked as far as they go.
type pkg struct {
	dir     string
	path    string // import path
	files   []*srcFile
	types   *types.Package // nil when no file could be type-checked
	info    *types.Info
	loading bool // type-checking in progress: importing it again is a cycle
}

type srcFile struct {
	path  string // absolute
	ast   *ast.File
	typed bool // part of the type-checked package, so pkg.info covers it
}

func (c *checker) warnf(format string, args ...any) {
	c.warn(fmt.Sprintf(format, args...))
}

// display turns an absolute path below root back into one relative to the caller's root.
func (c *checker) display(abs string) string {
	rel, err := filepath.Rel(c.absRoot, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs
	}
	return filepath.Join(c.root, rel)
}

func (c *checker) underRoot(abs string) bool {
	rel, err := filepath.Rel(c.absRoot, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// isSource reports whether a file name is one the rules apply to: a Go file that is not a
// test and that the go tool would not ignore.
func isSource(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") &&
		!strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_")
}

// sourceDirs walks root and returns, sorted, every directory holding a source file. Files
// and directories may vanish while others edit the tree; below root that is a warning.
func (c *checker) sourceDirs() ([]string, error) {
	seen := make(map[string]bool)
	var dirs []string
	err := filepath.WalkDir(c.absRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == c.absRoot {
				return err
			}
			c.warnf("%s: %v", c.display(path), err)
			return nil
		}
		if d.IsDir() {
			name := d.Name()
			if path != c.absRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.Dir(path); isSource(d.Name()) && !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// findModule returns the module path and directory of the go.mod enclosing dir, if any.
func findModule(dir string) (modPath, modDir string) {
	for d := dir; ; {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if i := strings.Index(line, "//"); i >= 0 {
					line = line[:i]
				}
				f := strings.Fields(line)
				if len(f) == 2 && f[0] == "module" {
					if p, err := strconv.Unquote(f[1]); err == nil {
						return p, d
					}
					return f[1], d
				}
			}
			return "", ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ""
		}
		d = parent
	}
}

// localDir maps an import path of the enclosing module to its directory.
func (c *checker) localDir(path string) (string, bool) {
	switch {
	case c.modPath == "":
		return "", false
	case path == c.modPath:
		return c.modDir, true
	case strings.HasPrefix(path, c.modPath+"/"):
		return filepath.Join(c.modDir, filepath.FromSlash(path[len(c.modPath)+1:])), true
	}
	return "", false
}

func (c *checker) importPath(dir string) string {
	if c.modPath != "" {
		if rel, err := filepath.Rel(c.modDir, dir); err == nil && !strings.HasPrefix(rel, "..") {
			if rel == "." {
				return c.modPath
			}
			return c.modPath + "/" + filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(dir)
}

// Import and ImportFrom make the checker the types.Importer of the packages it checks:
// packages of the enclosing module come from load, so that one that is mid-edit still
// yields the types it has; everything else comes from the source importer.
func (c *checker) Import(path string) (*types.Package, error) {
	return c.ImportFrom(path, c.absRoot, 0)
}

func (c *checker) ImportFrom(path, srcDir string, mode types.ImportMode) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	dir, ok := c.localDir(path)
	if !ok {
		return c.src.ImportFrom(path, srcDir, mode)
	}
	p := c.load(dir)
	if p.types == nil {
		if p.loading {
			return nil, fmt.Errorf("import cycle through %q", path)
		}
		return nil, fmt.Errorf("no Go files for %q in %s", path, dir)
	}
	return p.types, nil
}

// load parses and type-checks the package in dir, once.
func (c *checker) load(dir string) *pkg {
	if p, ok := c.pkgs[dir]; ok {
		return p
	}
	p := &pkg{dir: dir, path: c.importPath(dir), loading: true}
	c.pkgs[dir] = p
	defer func() { p.loading = false }()

	entries, err := os.ReadDir(dir)
	if err != nil {
		c.warnf("%s: %v", c.display(dir), err)
		return p
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !isSource(name) {
			continue
		}
		full := filepath.Join(dir, name)
		f, err := parser.ParseFile(c.fset, full, nil, parser.ParseComments)
		if err != nil {
			c.warnf("%s: does not parse (checked as far as it does): %v", c.display(full), err)
		}
		if f == nil || f.Name == nil {
			continue
		}
		// Files excluded by build constraints for this platform are still checked, by syntax.
		match, err := build.Default.MatchFile(dir, name)
		p.files = append(p.files, &srcFile{path: full, ast: f, typed: match && err == nil})
	}
	c.typecheck(p)
	return p
}

func (c *checker) typecheck(p *pkg) {
	// Type-check the files of the most common package name; a stray file of another
	// package (mid-edit, or a //go:build ignore program) is checked by syntax only.
	counts := make(map[string]int)
	name := ""
	for _, f := range p.files {
		if !f.typed {
			continue
		}
		n := f.ast.Name.Name
		counts[n]++
		if name == "" || counts[n] > counts[name] || counts[n] == counts[name] && n < name {
			name = n
		}
	}
	var files []*ast.File
	for _, f := range p.files {
		if f.typed && f.ast.Name.Name != name {
			f.typed = false
			c.warnf("%s: package %s, not %s: not type-checked", c.display(f.path), f.ast.Name.Name, name)
		}
		if f.typed {
			files = append(files, f.ast)
		}
	}
	if len(files) == 0 {
		return
	}
	var errs []error
	conf := types.Config{
		Importer:         c,
		FakeImportC:      true,
		IgnoreFuncBodies: !c.underRoot(p.dir), // imported only for its types
		Sizes:            types.SizesFor("gc", build.Default.GOARCH),
		Error:            func(err error) { errs = append(errs, err) },
	}
	p.info = &types.Info{
		Types: make(map[ast.Expr]types.TypeAndValue),
		Uses:  make(map[*ast.Ident]types.Object),
	}
	p.types, _ = conf.Check(p.path, c.fset, files, p.info)
	if len(errs) > 0 {
		first := errs[0].Error()
		if te, ok := errs[0].(types.Error); ok {
			first = c.display(te.Fset.Position(te.Pos).Filename) + ":" +
				strconv.Itoa(te.Fset.Position(te.Pos).Line) + ": " + te.Msg
		}
		c.warnf("%s: does not type-check (%d errors; first: %s); where types are missing, map ranges are found by syntax only",
			c.display(p.dir), len(errs), first)
	}
}

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
