package detcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Each case is a small module written to a temporary directory. A line whose expected
// violations are "rule1 rule2" ends in the comment "// want rule1 rule2"; every other line
// must be clean. Cases whose packages type-check also assert that no warning was given, so
// that a broken importer cannot hide behind the syntactic fallback.

type testCase struct {
	files    map[string]string // path below the module root → contents
	warnings bool              // the case has parse or type errors on purpose
}

const goMod = "module example.com/m\n\ngo 1.26\n"

func TestGoStatement(t *testing.T) {
	run(t, testCase{files: map[string]string{
		"p/p.go": `package p

func g() {}

func f() {
	go g() // want go
	go func() {}() // want go
}
`,
		// Found at any depth below the root.
		"p/q/r/deep.go": `package r

func f(g func()) { go g() } // want go
`,
	}})
}

func TestChannels(t *testing.T) {
	run(t, testCase{files: map[string]string{
		"p/p.go": `package p

type T struct {
	c chan int // want chan
	d <-chan struct{} // want chan
}

func f(ch chan int) int { // want chan
	ch <- 1 // want chan
	v := <-ch // want chan
	select { // want chan
	case ch <- 2: // want chan
	default:
	}
	close(ch) // want chan
	return v
}

// Only types show that t.c is a channel here.
func g(t T) int {
	n := 0
	for x := range t.c { // want chan
		n += x
	}
	return n
}

type closer struct{}

func (closer) close() {}

// A method or a local function named close is not the builtin.
func h(c closer) {
	c.close()
	close := func(int) {}
	close(1)
}
`,
	}})
}

func TestImports(t *testing.T) {
	run(t, testCase{files: map[string]string{
		// Type-checked: the allowed imports and a few small denied ones.
		"p/p.go": `package p

import (
	"errors"
	"math/bits"
	"sort"
	"strings"
	"time"
	_ "sync" // want import
	_ "sync/atomic" // want import
	_ "math/rand" // want import
	_ "hash/maphash" // want import
	u "unsafe" // want import
)

var (
	_ = errors.New
	_ = bits.Len
	_ = sort.Ints
	_ = strings.Cut
	_ = time.Second
	_ = u.Sizeof(0)
)
`,
		// Excluded by its build constraint, so checked by syntax alone (and the heavy
		// packages are not type-checked from source).
		"p/never.go": `//go:build never

package p

import (
	_ "os" // want import
	_ "os/exec" // want import
	_ "os/signal" // want import
	_ "net" // want import
	_ "net/http" // want import
	_ "net/netip" // want import
	_ "syscall" // want import
	_ "golang.org/x/sys/unix" // want import
	_ "math/rand/v2" // want import
	_ "crypto/rand" // want import
	_ "runtime" // want import
	_ "runtime/debug" // want import
	_ "io/ioutil" // want import
	_ "osfoo"
	_ "network"
	_ "crypto/sha256"
)
`,
	}})
}

func TestTime(t *testing.T) {
	run(t, testCase{files: map[string]string{
		"p/plain.go": `package p

import "time"

const Interval = 10 * time.Millisecond

var d time.Duration = time.Second

func f() time.Duration {
	start := time.Now() // want time
	time.Sleep(d) // want time
	<-time.After(d) // want chan time
	_ = time.Unix(0, 0).Add(Interval)
	return time.Since(start) // want time
}

var clock = time.Now // want time

type fake struct{}

func (fake) Now() int { return 0 }

// A local variable shadows the package name.
func shadow() int {
	time := fake{}
	return time.Now()
}
`,
		"p/alias.go": `package p

import t "time"

func g() t.Time {
	tm := t.NewTimer(t.Second) // want time
	_ = tm
	t.AfterFunc(t.Second, func() {}) // want time
	_ = t.NewTicker // want time
	_ = t.Tick(t.Second) // want time
	_ = t.Until(t.Time{}) // want time
	return t.Now() // want time
}
`,
		"p/dot.go": `package p

import . "time"

var _ Duration = Millisecond

func h() Time { return Now() } // want time
`,
	}})
}

func TestMapRange(t *testing.T) {
	run(t, testCase{files: map[string]string{
		"p/p.go": `package p

import (
	"maps"
	"slices"
	"sort"
)

type Set map[string]struct{}

type S struct{ m map[string]int }

func f(m map[string]int, s Set, x S, xs []int) []string {
	n := 0
	for k := range m { // want maprange
		n += len(k)
	}
	for k := range s { // want maprange
		n += len(k)
	}
	for _, v := range x.m { // want maprange
		n += v
	}
	for k, v := range map[string]int{"a": 1} { // want maprange
		n += len(k) + v
	}
	var keys []string
	//narad:sorted
	for k := range m {
		keys = append(keys, k)
	}
	for k := range x.m { //narad:sorted keys are sorted below
		keys = append(keys, k)
	}
	//narad:sorted

	for k := range s { // want maprange
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, v := range xs {
		n += v
	}
	for i := range 3 {
		n += i
	}
	for k := range maps.Keys(m) { // want maprange
		keys = append(keys, k)
	}
	vs := slices.Collect(maps.Values(m)) // want maprange
	keys = append(keys, slices.Sorted(maps.Keys(m))...)
	vs = append(vs, slices.Sorted(maps.Values(m))...)
	_ = vs
	return keys
}

func g[M ~map[string]int](m M) int {
	n := 0
	for _, v := range m { // want maprange
		n += v
	}
	return n + len(m)
}
`,
	}})
}

// A package that is mid-edit: a parse error in one file and a type error in another. The
// syntactic rules still apply everywhere, and map ranges are found wherever go/types could
// infer a type, or, failing that, where the file alone shows a map.
func TestBrokenPackage(t *testing.T) {
	run(t, testCase{warnings: true, files: map[string]string{
		"p/types.go": `package p

import t "time"

var table = map[string]int{"a": 1}

func f(m map[string]int) int {
	undefinedThing()
	local := make(map[int]bool)
	n := 0
	for k := range local { // want maprange
		n += k
	}
	for k := range table { // want maprange
		n += len(k)
	}
	for k := range unknown.Map {
		n += k
	}
	_ = t.Now() // want time
	go f(m) // want go
	return n
}
`,
		"p/syntax.go": `package p

import "time"

func g(ch chan int) { // want chan
	go g(ch) // want go
	_ = time.Now() // want time
	x := )
}
`,
		// Not type-checked at all (excluded by its build constraint): syntax only.
		"p/never.go": `//go:build never

package p

import tt "time"

type Set map[string]bool

var global = map[int]int{}

func h(m map[string]int, s Set, v struct{ m map[int]int }) {
	for k := range m { // want maprange
		_ = k
	}
	for k := range s { // want maprange
		_ = k
	}
	for k := range global { // want maprange
		_ = k
	}
	lit := map[int]int{}
	for k := range lit { // want maprange
		_ = k
	}
	for k := range map[int]int{} { // want maprange
		_ = k
	}
	for k := range v.m {
		_ = k
	}
	_ = tt.Since(tt.Time{}) // want time
}
`,
		// Imports the broken package and still gets the types it has.
		"q/q.go": `package q

import "example.com/m/p"

func f() int {
	n := 0
	for _, v := range p.Table2 { // want maprange
		n += v
	}
	return n
}
`,
		"p/table2.go": `package p

var Table2 = map[string]int{}
`,
	}})
}

func TestLinkname(t *testing.T) {
	run(t, testCase{files: map[string]string{
		"p/p.go": `package p

import _ "unsafe" // want import

//go:linkname nanotime runtime.nanotime // want linkname
func nanotime() int64

// A comment that mentions go:linkname is not a directive.
/*
//go:linkname is not a directive inside a block comment either
*/
`,
	}})
}

func TestTestFilesAndIgnoredDirsExempt(t *testing.T) {
	run(t, testCase{files: map[string]string{
		"p/p.go": "package p\n\nfunc F() int { return 1 }\n",
		"p/p_test.go": `package p

import (
	"sync"
	"testing"
	"time"
)

func TestF(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	go func() { mu.Unlock() }()
	_ = time.Now()
}
`,
		"p/testdata/x.go":   "package x\n\nfunc f() { go f() }\n",
		"p/_hidden/x.go":    "package x\n\nfunc f() { go f() }\n",
		"p/.hidden/x.go":    "package x\n\nfunc f() { go f() }\n",
		"p/_scratch.go":     "package p\n\nfunc f() { go f() }\n",
		"p/readme.txt":      "go func() {}()\n",
		"p/sub/sub_test.go": "package sub\n\nfunc f() { go f() }\n",
	}})
}

// A package written the way core packages should be: no violations and no warnings.
func TestClean(t *testing.T) {
	run(t, testCase{files: map[string]string{
		"p/doc.go": `// Package p is driven by events in, actions out.
//
//	for _, op := range ready.Ops {
//		go func() { results <- apply(op) }() // in a shell, never here
//	}
package p
`,
		"p/p.go": `package p

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"time"

	"example.com/m/p/rng"
)

const syncIntervalMs = 5

// Timeout is a duration carried by events; reading it is not reading the clock.
const Timeout = 200 * time.Millisecond

var ErrFull = errors.New("p: full")

type Event struct {
	Now time.Duration // time arrives in events
}

type Machine struct {
	rand    *rng.Rand
	pending map[string]int
	order   []string
}

func (m *Machine) Step(ev Event) ([]string, error) {
	if len(m.pending) > 100 {
		return nil, ErrFull
	}
	keys := make([]string, 0, len(m.pending))
	//narad:sorted
	for k := range m.pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range slices.Sorted(maps.Keys(m.pending)) {
		keys = append(keys, k)
	}
	if v, ok := m.pending["x"]; ok && ev.Now > Timeout {
		keys = append(keys, string(rune('a'+v+m.rand.Intn(3))))
	}
	m.order = append(m.order, keys...)
	return keys, nil
}

type closer struct{}

func (closer) close() {}

func (closer) Now() int { return syncIntervalMs }

func use(c closer) int {
	c.close()
	return c.Now()
}
`,
		"p/rng/rng.go": `package rng

type Rand struct{ state uint64 }

func (r *Rand) Intn(n int) int {
	r.state = r.state*6364136223846793005 + 1
	return int(r.state>>33) % n
}
`,
	}})
}

func TestRootErrors(t *testing.T) {
	if _, err := Check(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Check of a missing directory: no error")
	}
	file := filepath.Join(t.TempDir(), "f.go")
	if err := os.WriteFile(file, []byte("package f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(file); err == nil {
		t.Error("Check of a file: no error")
	}
}

// run writes the case's module, checks it, and compares the violations with the "// want"
// comments. Violations are compared as "file:line: rule", file relative to the root.
func run(t *testing.T, tc testCase) {
	t.Helper()
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	var want []string
	for name, src := range tc.files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(src, "\n") {
			if _, rules, ok := strings.Cut(line, "// want "); ok {
				for _, r := range strings.Fields(rules) {
					want = append(want, fmt.Sprintf("%s:%d: %s", name, i+1, r))
				}
			}
		}
	}

	var warnings []string
	vs, err := CheckWarn(root, func(msg string) { warnings = append(warnings, msg) })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		rel, err := filepath.Rel(root, v.File)
		if err != nil || !strings.HasPrefix(v.File, root) {
			t.Errorf("violation file %q is not below the root %q", v.File, root)
		}
		got = append(got, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), v.Line, v.Rule))
		if v.Text == "" {
			t.Errorf("%s: empty text", v)
		}
		t.Log(v)
	}
	for _, w := range warnings {
		t.Log("warning: " + w)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations differ\n got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	if tc.warnings && len(warnings) == 0 {
		t.Error("expected warnings about the broken package, got none")
	}
	if !tc.warnings && len(warnings) > 0 {
		t.Errorf("unexpected warnings (the case should type-check):\n\t%s", strings.Join(warnings, "\n\t"))
	}
}
