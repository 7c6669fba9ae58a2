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
