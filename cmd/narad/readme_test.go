package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's quick start, run by readmeQuickStart.
const (
	readmeMarker = "<!-- quick start: TestToolsOnOneNode/readme-quick-start"
	// readmePassword and readmeAddr are the README's admin password and node address; the
	// session runs with the test daemon's.
	readmePassword = "choose-a-password"
	readmeAddr     = "127.0.0.1:7942"
)

// readmeStep is one command of the session and the output the README shows for it.
type readmeStep struct {
	line string   // the command line, without "$ " and its comment
	want []string // the lines shown after it; "..." in one stands for anything
}

// readmeSession reads the shell block that follows the marker in README.md.
func readmeSession(t *testing.T) []readmeStep {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte(readmeMarker))
	if !ok {
		t.Fatalf("README.md has no quick start marked %q", readmeMarker)
	}
	_, rest, ok = bytes.Cut(rest, []byte("```sh\n"))
	block, _, ok2 := bytes.Cut(rest, []byte("\n```"))
	if !ok || !ok2 {
		t.Fatal("README.md: the quick start's shell block is not closed")
	}
	var steps []readmeStep
	for _, l := range strings.Split(string(block), "\n") {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			steps = append(steps, readmeStep{line: stripComment(cmd)})
			continue
		}
		if len(steps) == 0 {
			t.Fatalf("README.md: quick start output %q before any command", l)
		}
		steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
	}
	return steps
}

// stripComment cuts an unquoted " #" comment off a command line.
func stripComment(line string) string {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && i > 0 && line[i-1] == ' ':
			return strings.TrimSpace(line[:i])
		}
	}
	return strings.TrimSpace(line)
}

// shellWords splits a command line as sh would for the quoting the README uses: single
// and double quotes, no expansion.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var w strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("README.md: unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// readmeQuickStart runs the README's quick start on d, a fresh node: every command as the
// README writes it (narad in this process), and every output as the README shows it.
func readmeQuickStart(t *testing.T, d *testDaemon) {
	env := map[string]string{"NARAD_URL": d.addr}
	last := 0
	for _, s := range readmeSession(t) {
		out, ok := readmeRun(t, s.line, env, &last)
		if !ok {
			t.Fatalf("README.md quick start: %q is not a command this test knows how to run", s.line)
		}
		want := strings.ReplaceAll(strings.Join(s.want, "\n"), readmeAddr, d.addr)
		if !readmeMatch(want, strings.TrimSuffix(out, "\n")) {
			t.Errorf("README.md quick start: $ %s\nprinted:\n%s\nthe README shows:\n%s", s.line, out, want)
		}
	}
}

// readmeRun runs one command line of the session; ok is false for one it does not know.
func readmeRun(t *testing.T, line string, env map[string]string, last *int) (out string, ok bool) {
	stdin := ""
	if before, after, piped := strings.Cut(line, " | "); piped {
		w := shellWords(t, before)
		if len(w) != 2 || w[0] != "printf" {
			return "", false
		}
		stdin = strings.ReplaceAll(w[1], `\n`, "\n")
		line = after
	}
	words := shellWords(t, line)
	switch {
	case line == "make build" || line == "export PATH=$PWD/bin:$PATH":
		return "", true // the test runs the command line in this process
	case line == "echo $?":
		return fmt.Sprintf("%d\n", *last), true
	case len(words) == 2 && words[0] == "export":
		k, v, _ := strings.Cut(words[1], "=")
		if k == "NARAD_PASSWORD" && v == readmePassword {
			v = testAdminPassword
		}
		env[k] = v
		return "", true
	case len(words) > 0 && words[0] == "narad":
		u := &cliUser{t: t, env: env}
		r := u.run(stdin, words[1:]...)
		*last = r.code
		return r.stdout + r.stderr, true
	}
	return "", false
}

// readmeMatch reports whether got matches want, where "..." in want stands for anything
// within a line.
func readmeMatch(want, got string) bool {
	re := regexp.QuoteMeta(want)
	re = strings.ReplaceAll(re, regexp.QuoteMeta("..."), "[^\n]*")
	return regexp.MustCompile("^" + re + "$").MatchString(got)
}

// TestReadmeSessionParsing: the parts of the quick start's runner that decide whether the
// README drifted.
func TestReadmeSessionParsing(t *testing.T) {
	if got := stripComment(`narad produce orders '{"id":1}' # a comment`); got != `narad produce orders '{"id":1}'` {
		t.Errorf("stripComment: %q", got)
	}
	if got := stripComment(`printf 'a # b' | narad x`); got != `printf 'a # b' | narad x` {
		t.Errorf("stripComment in quotes: %q", got)
	}
	if w := shellWords(t, `narad produce orders '{"id":1}' --key "customer 7"`); len(w) != 6 || w[3] != `{"id":1}` ||
		w[5] != "customer 7" {
		t.Errorf("shellWords: %q", w)
	}
	for _, c := range []struct {
		want, got string
		match     bool
	}{
		{`{"offset":0,"timestamp":...}`, `{"offset":0,"timestamp":1796605350}`, true},
		{`{"offset":0,"timestamp":...}`, `{"offset":1,"timestamp":1796605350}`, false},
		{"accepted 1", "accepted 1\naccepted 1", false},
		{"a ...\nb", "a x\nb", true},
		{"...", "two\nlines", false},
	} {
		if readmeMatch(c.want, c.got) != c.match {
			t.Errorf("readmeMatch(%q, %q) = %v", c.want, c.got, !c.match)
		}
	}
}
