package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/narad/narad/client"
)

// cliRun is one run of a client command in this process: its exit status and output.
type cliRun struct {
	code   int
	stdout string
	stderr string
}

func (r cliRun) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// cliUser is the command line as one user sees it: the environment the commands read.
type cliUser struct {
	t   *testing.T
	env map[string]string
}

// cliAs is the command line of user with password, talking to urls.
func cliAs(t *testing.T, urls, user, password string) *cliUser {
	return &cliUser{t: t, env: map[string]string{"NARAD_URL": urls, "NARAD_USER": user, "NARAD_PASSWORD": password}}
}

// adminCLI is the root user's command line against d.
func adminCLI(d *testDaemon) *cliUser { return cliAs(d.t, d.addr, "admin", testAdminPassword) }

// with is u with more environment.
func (u *cliUser) with(kv ...string) *cliUser {
	env := map[string]string{}
	for k, v := range u.env {
		env[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return &cliUser{t: u.t, env: env}
}

// run runs args with stdin.
func (u *cliUser) run(stdin string, args ...string) cliRun {
	var out, errb bytes.Buffer
	code := runCLI(cliEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return u.env[k] }}, args)
	return cliRun{code: code, stdout: out.String(), stderr: errb.String()}
}

// ok runs args (stdin empty) and requires exit status 0; it returns stdout.
func (u *cliUser) ok(args ...string) string {
	u.t.Helper()
	return u.okIn("", args...)
}

// okIn is ok with stdin.
func (u *cliUser) okIn(stdin string, args ...string) string {
	u.t.Helper()
	r := u.run(stdin, args...)
	if r.code != 0 {
		u.t.Fatalf("narad %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// fails runs args and requires exit status code and a stderr holding want.
func (u *cliUser) fails(code int, want string, args ...string) cliRun {
	u.t.Helper()
	r := u.run("", args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		u.t.Fatalf("narad %s: %v; want exit %d and %q on stderr", strings.Join(args, " "), r, code, want)
	}
	return r
}

// jsonOut decodes a command's one JSON line.
func jsonOut[T any](t *testing.T, stdout string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("decode %q: %v", stdout, err)
	}
	return v
}

// messageLines decodes consume's or replay's JSON lines.
func messageLines(t *testing.T, stdout string) []messageJSON {
	t.Helper()
	var ms []messageJSON
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l != "" {
			ms = append(ms, jsonOut[messageJSON](t, l))
		}
	}
	return ms
}

// TestToolsOnOneNode runs every client command and the client package against one node
// with access control on (one daemon for all: its start and its users' bcrypt hashes are
// most of the time under the race detector).
func TestToolsOnOneNode(t *testing.T) {
	d := startDaemon(t, t.TempDir(), nil, nil)
	for _, c := range []struct {
		name string
		f    func(*testing.T, *testDaemon)
	}{{"readme-quick-start", readmeQuickStart}, {"topics", cliTopics}, {"produce-consume-ack", cliProduceConsumeAck}, {"follow", cliConsumeFollowStopsOnASignal},
		{"users", cliUsers}, {"cluster", cliClusterCommandsOnOneNode}, {"bench", cliBench},
		{"client-messages", clientMessagesAndLeases}, {"client-consumer", clientConsumer}, {"client-admin", clientAdmin}} {
		t.Run(c.name, func(t *testing.T) { c.f(t, d.in(t)) })
	}
}

// in is d failing t (a subtest's) rather than the test that started it.
func (d *testDaemon) in(t *testing.T) *testDaemon {
	c := *d
	c.t = t
	return &c
}

func cliTopics(t *testing.T, d *testDaemon) {
	u := adminCLI(d)
	tp := jsonOut[client.Topic](t, u.ok("topic", "create", "t1", "--partitions", "2", "--visibility-timeout", "1m", "-o", "json"))
	if tp.Name != "t1" || tp.Partitions != 2 || tp.VisibilityTimeoutMs != 60_000 || tp.RetentionMs != 7*24*3600*1000 {
		t.Fatalf("created %+v", tp)
	}
	u.fails(exitConflict, "409 Conflict", "topic", "create", "t1")
	if out := u.ok("topic", "create", "t2"); !strings.Contains(out, "NAME") || !strings.Contains(out, "t2") {
		t.Fatalf("create's table: %q", out)
	}
	if out := u.ok("topic", "list"); !strings.Contains(out, "t1 ") || !strings.Contains(out, "t2 ") {
		t.Fatalf("list: %q", out)
	}
	list := jsonOut[struct{ Topics []client.Topic }](t, u.ok("topic", "list", "-o", "json"))
	if names := fmt.Sprint(list.Topics); len(list.Topics) < 2 || !strings.Contains(names, "{t1 ") || !strings.Contains(names, "{t2 ") {
		t.Fatalf("list -o json: %+v", list)
	}
	tp = jsonOut[client.Topic](t, u.ok("topic", "patch", "t1", "--partitions", "3", "--retention", "1h", "-o", "json"))
	if tp.Partitions != 3 || tp.RetentionMs != 3_600_000 || tp.VisibilityTimeoutMs != 60_000 {
		t.Fatalf("patched %+v", tp)
	}
	got := u.ok("topic", "get", "t1")
	if !strings.Contains(got, "HIGH WATERMARK") || strings.Count(got, d.nodeID) != 3 {
		t.Fatalf("get: %q", got)
	}
	if tp := jsonOut[client.Topic](t, u.ok("topic", "get", "t1", "-o", "json")); len(tp.PartitionStats) != 3 {
		t.Fatalf("get -o json: %+v", tp)
	}
	if out := u.ok("topic", "delete", "t2"); out != "deleted topic t2\n" {
		t.Fatalf("delete: %q", out)
	}
	u.fails(exitNotFound, "404 Not Found", "topic", "get", "t2")
	u.fails(exitNotFound, "404", "topic", "delete", "t2")
	u.fails(exitError, "400", "topic", "patch", "t1", "--partitions", "1") // partitions only grow
}

func cliProduceConsumeAck(t *testing.T, d *testDaemon) {
	u := adminCLI(d)
	u.ok("topic", "create", "m", "--partitions", "2")
	if out := u.ok("produce", "m", "hello", "--partition", "1"); out != "accepted 1\n" {
		t.Fatalf("produce: %q", out)
	}
	if out := u.okIn("a\nb\n\r\n\nc\n", "produce", "m", "--key", "k", "--batch", "2"); out != "accepted 3\n" {
		t.Fatalf("produce from stdin: %q", out)
	}
	u.fails(exitNotFound, "404", "produce", "nope", "x")
	d.waitCommitted("m", 4)
	rs := messageLines(t, u.ok("replay", "m", "--partition", "1", "--offset", "0"))
	if len(rs) != 1 || rs[0].text(t) != "hello" || rs[0].ReceiptHandle != "" {
		t.Fatalf("replay: %+v", rs)
	}
	if out := u.ok("replay", "m", "--partition", "1", "--offset", "99"); out != "" {
		t.Fatalf("replay past the end: %q", out)
	}
	u.fails(exitUsage, "required", "replay", "m", "--offset", "0")
	ms := messageLines(t, u.ok("consume", "m", "--max", "10", "--count", "4"))
	handles := map[string]string{}
	for _, m := range ms {
		handles[m.text(t)] = m.ReceiptHandle
	}
	if len(ms) != 4 || len(handles) != 4 || handles["a"] == "" || *keyOf(t, ms, "a") != "k" {
		t.Fatalf("consume --count 4: %+v", ms)
	}
	if out := u.ok("extend", "m", handles["hello"]); out != "extended 1 of 1\n" {
		t.Fatalf("extend: %q", out)
	}
	if out := u.ok("nack", "m", handles["b"]); out != "released 1 of 1\n" {
		t.Fatalf("nack: %q", out)
	}
	stdin := handles["hello"] + "\n" + handles["a"] + "\n" + handles["c"] + "\n"
	if out := u.okIn(stdin, "ack", "m"); out != "acked 3 of 3\n" {
		t.Fatalf("ack from stdin: %q", out)
	}
	u.fails(exitGone, "410 Gone", "ack", "m", handles["a"])
	r := u.run(handles["a"]+"\n"+handles["c"]+"\n", "ack", "m", "-o", "json")
	if r.code != exitGone || r.stdout != `{"acked":0,"failed":2}`+"\n" || !strings.Contains(r.stderr, "handle 2: 410") {
		t.Fatalf("batch ack of settled leases: %v", r)
	}
	again := messageLines(t, u.ok("consume", "m", "--wait", "5s", "--ack"))
	if len(again) != 1 || again[0].text(t) != "b" || again[0].ReceiptHandle != "" {
		t.Fatalf("consume --ack after the nack: %+v", again)
	}
	if out := u.ok("consume", "m"); out != "" {
		t.Fatalf("consume of an empty topic: %q", out)
	}
	u.fails(exitUsage, "--max", "consume", "m", "--max", "101")
	u.fails(exitUsage, "no receipt handle", "ack", "m")
}

// keyOf is the key of the message whose text is text.
func keyOf(t *testing.T, ms []messageJSON, text string) *string {
	for _, m := range ms {
		if m.text(t) == text && m.Key != nil {
			return m.Key
		}
	}
	empty := ""
	return &empty
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func cliConsumeFollowStopsOnASignal(t *testing.T, d *testDaemon) {
	u := adminCLI(d)
	u.ok("topic", "create", "f", "--partitions", "1")
	var out, errb syncBuffer
	stop := make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() {
		done <- runCLI(cliEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, stop: stop,
			getenv: func(k string) string { return u.env[k] }}, []string{"consume", "f", "--follow", "--ack", "--wait", "1s"})
	}()
	for i := range 3 {
		u.ok("produce", "f", fmt.Sprintf("m%d", i))
		eventually(t, startBound, fmt.Sprintf("consume --follow prints m%d", i), func() bool {
			return strings.Count(out.String(), "\n") == i+1
		})
	}
	stop <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("consume --follow after SIGINT: exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(startBound):
		t.Fatal("consume --follow did not end after SIGINT")
	}
	if ms := messageLines(t, out.String()); len(ms) != 3 || ms[2].text(t) != "m2" {
		t.Fatalf("followed %+v", ms)
	}
	if out := u.ok("consume", "f"); out != "" {
		t.Fatalf("the followed records were not acked: %q", out)
	}
}

// cliUsers: every bcrypt hash costs about 2 s under the race detector, so this makes
// few (a create, one login, one's own change and an admin's).
func cliUsers(t *testing.T, d *testDaemon) {
	admin := adminCLI(d)
	out := admin.okIn("a-long-password\n", "user", "create", "shop", "--grant", "produce:sales", "--grant", "consume:sales")
	if !strings.Contains(out, "shop") || !strings.Contains(out, "produce:sales consume:sales") {
		t.Fatalf("user create: %q", out)
	}
	list := jsonOut[struct{ Users []client.User }](t, admin.ok("user", "list", "-o", "json"))
	if len(list.Users) != 2 {
		t.Fatalf("user list: %+v", list)
	}
	if u := jsonOut[client.User](t, admin.ok("user", "get", "shop", "-o", "json")); len(u.Grants) != 2 || u.Root {
		t.Fatalf("user get: %+v", u)
	}
	admin.ok("topic", "create", "sales")
	shop := cliAs(t, d.addr, "shop", "a-long-password")
	shop.ok("produce", "sales", "x")
	shop.fails(exitAccess, "403 Forbidden", "topic", "create", "other")
	admin.ok("user", "grants", "shop", "--grant", "create:other*")
	shop.ok("topic", "create", "other1")
	shop.fails(exitAccess, "403", "produce", "sales", "x") // the produce grant was replaced
	// One's own password: the new one from the environment, the current one sent along.
	shop.with("NARAD_NEW_PASSWORD", "env-password").ok("user", "passwd", "shop")
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(testAdminPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An admin's change of another's (the new password from a file), with the admin's
	// own password from a file.
	admin.with("NARAD_PASSWORD", "").ok("--password-file", pwFile, "user", "passwd", "shop", "--new-password-file", pwFile)
	if out := admin.ok("user", "delete", "shop"); out != "deleted user shop\n" {
		t.Fatalf("user delete: %q", out)
	}
	admin.fails(exitNotFound, "404", "user", "get", "shop")
	admin.fails(exitAccess, "403", "user", "delete", "admin")
	admin.fails(exitUsage, "no new password", "user", "create", "nopass")
}

func cliClusterCommandsOnOneNode(t *testing.T, d *testDaemon) {
	u := adminCLI(d)
	// A fresh node lists itself once the metastore committed its join, which its first
	// heartbeat asks for: up to about a second after /readyz (the subtests before this
	// one used to take longer than that).
	eventually(t, 10*time.Second, "the node lists itself as a member", func() bool {
		return strings.Contains(u.ok("cluster", "members"), d.addr)
	})
	out := u.ok("cluster", "members")
	if !strings.Contains(out, "LEADER") || !strings.Contains(out, d.addr) || !strings.Contains(out, "alive") {
		t.Fatalf("members: %q", out)
	}
	ms := jsonOut[struct{ Members []client.Member }](t, u.ok("cluster", "members", "-o", "json"))
	if len(ms.Members) != 1 || !ms.Members[0].Leader {
		t.Fatalf("members -o json: %+v", ms)
	}
	if out := u.ok("cluster", "moves", "-o", "json"); out != `{"moves":[]}`+"\n" {
		t.Fatalf("moves: %q", out)
	}
	u.ok("cluster", "rebalance")
	dec := jsonOut[client.Decommission](t, u.ok("cluster", "decommission", "1", "--dry-run", "-o", "json"))
	if dec.Allowed == nil || *dec.Allowed || dec.Refusal == "" {
		t.Fatalf("decommission --dry-run of the only member: %+v", dec)
	}
	u.fails(exitConflict, "409", "cluster", "decommission", "1")
	u.fails(exitConflict, "409", "cluster", "decommission", "1", "--cancel")
	u.fails(exitNotFound, "404", "cluster", "forget", "9", "--dry-run")
	u.fails(exitConflict, "409", "cluster", "forget", "1", "--dry-run")
	u.ok("topic", "create", "c")
	u.fails(exitNotFound, "member not found", "cluster", "move", "c", "0", "--to", "9")
	u.fails(exitNotFound, "404", "cluster", "abort", "c", "0")
	u.fails(exitUsage, "member id", "cluster", "forget", "x")
	cliAs(t, d.addr, "nobody", "").fails(exitAccess, "401", "cluster", "members")
}

func TestCLIUsageAndExitStatuses(t *testing.T) {
	u := cliAs(t, closedAddr(t), "admin", "x")
	u.fails(exitUnavailable, "no node answered", "topic", "list")
	u.fails(exitUsage, "unknown command", "frobnicate")
	u.fails(exitUsage, "accepts 1 arg", "topic", "create")
	u.fails(exitUsage, "--output", "topic", "list", "-o", "yaml")
	u.fails(exitUsage, "unknown flag", "consume", "t", "--no-such-flag")
	u.fails(exitUsage, "bad node address", "--url", "ftp://x", "topic", "list")
	u.fails(exitUsage, "--password-file", "--password-file", "/nonexistent/pw", "topic", "list")
	if r := u.run("", "help"); r.code != 0 || !strings.Contains(r.stdout, "exit status of the client commands") ||
		!strings.Contains(r.stdout, "-produce-inflight-max") {
		t.Fatalf("help: %v", r)
	}
	if out := u.ok("completion", "bash"); !strings.Contains(out, "bash completion") {
		t.Fatalf("completion bash: %.200q", out)
	}
	if out := u.ok("version"); !strings.HasPrefix(out, "narad ") {
		t.Fatalf("version: %q", out)
	}
	if out := u.ok("produce", "--help"); !strings.Contains(out, "--key") {
		t.Fatalf("produce --help: %q", out)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	return freeAddrs(t, 1)[0]
}

func cliBench(t *testing.T, d *testDaemon) {
	u := adminCLI(d)
	s := jsonOut[benchSummary](t, u.ok("bench", "b", "--create", "--partitions", "2", "--messages", "300", "--workers", "4",
		"--batch", "10", "-o", "json"))
	if s.Messages != 300 || s.Requests != 30 || s.Errors != 0 || s.P50Ms <= 0 {
		t.Fatalf("bench -o json: %+v", s)
	}
	d.waitCommitted("b", 300)
	out := u.ok("bench", "b", "--messages", "50", "--workers", "2", "--size", "64")
	if !strings.Contains(out, "messages  50 accepted") || !strings.Contains(out, "p99") {
		t.Fatalf("bench: %q", out)
	}
	var term bytes.Buffer
	code := runCLI(cliEnv{stdin: strings.NewReader(""), stdout: &term, stderr: &term, terminal: true,
		getenv: func(k string) string { return u.env[k] }}, []string{"bench", "b", "--duration", "1100ms", "--workers", "2"})
	if code != 0 || !strings.Contains(term.String(), "\r") || !strings.Contains(term.String(), "msg/s") {
		t.Fatalf("bench on a terminal: exit %d, %q", code, term.String())
	}
	r := u.run("", "bench", "nope", "--messages", "5", "--workers", "1")
	if r.code != exitError || !strings.Contains(r.stdout, "404 Not Found ×5") {
		t.Fatalf("bench of a missing topic: %v", r)
	}
}
