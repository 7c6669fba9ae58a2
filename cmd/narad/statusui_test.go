package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	// pageBound bounds the whole browser part of TestStatusPage (start, every wait, the
	// screenshots): the page refreshes every pageRefreshMs, so it has many refreshes in it.
	pageBound     = 20 * time.Second
	pageRefreshMs = 500
	// screenshotDirEnv names a directory that gets a copy of the screenshots (a CI
	// artifact, or a look by hand); unset: they stay in the test's temporary directory.
	screenshotDirEnv = "NARAD_SCREENSHOT_DIR"
	viewerPassword   = "viewer-password"
)

// TestStatusPage loads GET /ui/ of a node of a running 3-node cluster in Debian's headless
// Chromium while a trickle of produces and consumes goes on: a wrong password is refused
// (401, said on the page); the root user sees the three members, the topic's six
// partitions and a chart of rates; a user with only a consume grant sees the topic but
// is told that the members need the admin grant (403). Any console error, uncaught
// exception or browser log error (but the network's: the page's own 401s) fails it.
// It writes a screenshot of each view under the test's temporary directory.
func TestStatusPage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three narad processes and a browser")
	}
	chromium := chromiumPath(t)
	began := time.Now()
	_, ms := clusterUnderTest(t)
	leader := createClusterTopicWith(t, ms, 30_000)
	createViewer(t, ms, leader)
	load := startPageLoad(ms)
	defer load.stop()
	t.Logf("cluster and topic ready after %v", time.Since(began).Round(time.Millisecond))

	browserAt := time.Now()
	ctx, problems := startBrowser(t, chromium)
	ctx, cancel := context.WithTimeout(ctx, pageBound)
	defer cancel()
	page := ms[0].c.base + "/ui/?refresh_ms=" + fmt.Sprint(pageRefreshMs)
	pageStep(t, ctx, "load the page, refused a wrong password", chromedp.Navigate(page),
		signIn("admin", "not-the-password"), chromedp.WaitVisible(chromedp.ID("login-error")))
	if text := pageText(t, ctx, chromedp.ID("login-error")); !strings.Contains(text, "401") {
		t.Errorf("a wrong password: the page says %q, want a 401", text)
	}
	pageStep(t, ctx, "sign in as admin: members, partitions and rates shown", signIn("admin", testAdminPassword),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#members-table tbody tr").length === 3 &&
			document.querySelectorAll('[data-topic="cluster"] tbody tr').length === 6 &&
			Number(document.getElementById("rates").dataset.samples) >= 4 &&
			document.querySelector("#rates path.p") !== null && document.getElementById("rate-p").textContent !== "0.0"`,
			chromedp.WithPollingMutation()))
	checkMembersShown(t, ctx, ms)
	checkPartitionsShown(t, ctx)
	screenshot(t, ctx, "status-admin.png")

	pageStep(t, ctx, "sign out, sign in as a consumer: 403 for the members, the topic shown", chromedp.Click(chromedp.ID("signout")),
		signIn("viewer", viewerPassword),
		chromedp.Poll[chromedp.Void](`(document.querySelector("#members .problem") || {}).textContent?.includes("403") &&
			document.querySelectorAll('[data-topic="cluster"] tbody tr').length === 6`, chromedp.WithPollingMutation()))
	if text := pageText(t, ctx, chromedp.ID("members")); !strings.Contains(text, "admin grant") {
		t.Errorf("a user without admin: the members section says %q", text)
	}
	screenshot(t, ctx, "status-viewer.png")
	t.Logf("browser part took %v", time.Since(browserAt).Round(time.Millisecond))
	for _, p := range problems() {
		t.Errorf("browser console: %s", p)
	}
	load.stop()
	load.check(t)
}

// chromiumPath is the chromium binary. Without one the test is skipped, unless CI is set:
// CI installs it (.ci/run), so a missing one there is a failure.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium binary on PATH while CI is set (.ci/run installs Debian's chromium package)")
	}
	t.Skip("no chromium binary on PATH (apt-get install chromium); with CI set this is a failure")
	return ""
}

// startBrowser starts headless Chromium on a fresh profile with the flags this machine
// needs (no sandbox as root; no background connections, which its closed network
// refuses) and listens to its console. problems returns the errors it saw so far. The
// browser is closed at cleanup, before its profile directory is removed.
func startBrowser(t *testing.T, exe string) (ctx context.Context, problems func() []string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-proxy-server", true))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	var mu sync.Mutex
	var seen []string
	note := func(format string, args ...any) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	err := chromedp.Listen(ctx, func(ev any) { // starts the browser, on ctx: not on a step's deadline
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				note("console.error(%s)", consoleArgs(ev.Args))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			desc := ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			note("uncaught exception at %s:%d: %s %s", d.URL, d.LineNumber+1, d.Text, desc)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
				note("browser log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func consoleArgs(args []*runtime.RemoteObject) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.Description
		if len(a.Value) > 0 {
			parts[i] = string(a.Value)
		}
	}
	return strings.Join(parts, ", ")
}

// signIn empties the page's sign-in form, types into it and submits it. (chromedp.Clear
// would not do: it sets the value attribute, which a field typed in no longer follows.)
func signIn(user, password string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.WaitVisible(chromedp.ID("login-form")),
		chromedp.Evaluate[chromedp.Void](`for (const id of ["user", "password"]) document.getElementById(id).value = ""`),
		chromedp.SendKeys(chromedp.ID("user"), user), chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
}

// pageStep runs the actions of one step, failing the test with what the page shows when
// they fail (a wait that reaches the deadline, mostly).
func pageStep(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		look, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		shown, _ := chromedp.Run(look, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v; the page shows:\n%s", what, err, shown)
	}
}

func pageText(t *testing.T, ctx context.Context, sel chromedp.ID) string {
	t.Helper()
	text, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("the text of #%s: %v", sel, err)
	}
	return text
}

// checkMembersShown: every member's row shows its address and that it is alive; one leads.
func checkMembersShown(t *testing.T, ctx context.Context, ms []*member) {
	t.Helper()
	text := pageText(t, ctx, "members")
	if n := strings.Count(text, "alive"); n != clusterNodes {
		t.Errorf("members: %d alive, want %d:\n%s", n, clusterNodes, text)
	}
	if n := strings.Count(text, "leader"); n != 1 {
		t.Errorf("members: %d leaders, want 1:\n%s", n, text)
	}
	for _, m := range ms {
		if !strings.Contains(text, m.addr) {
			t.Errorf("members: no %s:\n%s", m.addr, text)
		}
	}
}

// checkPartitionsShown: each of the topic's partitions has a row naming a member as its
// owner, and some partition has records.
func checkPartitionsShown(t *testing.T, ctx context.Context) {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll(
		'[data-topic="cluster"] tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent))`))
	if err != nil {
		t.Fatalf("read the partition rows: %v", err)
	}
	records := false
	for i, cells := range rows {
		if len(cells) != 8 || cells[0] != fmt.Sprint(i) || !slices.Contains([]string{"1", "2", "3"}, cells[1]) {
			t.Errorf("partition row %d: %q", i, cells)
			continue
		}
		records = records || cells[2] != "0"
	}
	if !records {
		t.Errorf("no partition shows a record: %q", rows)
	}
}

// screenshot writes the whole page as a PNG under the test's temporary directory (and a
// copy under $NARAD_SCREENSHOT_DIR when set).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	if dir := os.Getenv(screenshotDirEnv); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Errorf("copy the screenshot to $%s: %v", screenshotDirEnv, err)
		}
	}
}

// createViewer makes the user "viewer", who may consume from the topic and nothing else,
// and waits until node 1 (the page's node) knows it.
func createViewer(t *testing.T, ms []*member, leader int) {
	body := `{"username":"viewer","password":"` + viewerPassword + `","grants":[{"action":"consume","patterns":["cluster"]}]}`
	if r := ms[leader].c.do(http.MethodPost, "/v1/users", body); r.status != http.StatusCreated {
		t.Fatalf("create the viewer: %v", r)
	}
	eventually(t, clusterFormBound, "node 1 knows the viewer", func() bool {
		r, err := ms[0].c.as("viewer", viewerPassword).try(http.MethodGet, "/v1/topics/cluster", "")
		return err == nil && r.status == http.StatusOK
	})
}

// pageLoad is a trickle of work for the page's chart: one producer sending to every node
// in turn, and one consumer on node 1 (the page's node: its /metrics counts the
// deliveries) acking what it gets.
type pageLoad struct {
	ms       []*member
	client   *http.Client
	stopped  atomic.Bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	unusual  []string
	produced atomic.Int64
	consumed atomic.Int64
}

func startPageLoad(ms []*member) *pageLoad {
	l := &pageLoad{ms: ms, client: &http.Client{Timeout: 30 * time.Second}}
	l.wg.Add(2)
	go l.produce()
	go l.consume()
	return l
}

func (l *pageLoad) note(format string, args ...any) {
	l.mu.Lock()
	l.unusual = append(l.unusual, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *pageLoad) produce() {
	defer l.wg.Done()
	for n := 0; !l.stopped.Load(); n++ {
		m := l.ms[n%len(l.ms)]
		resp, err := postAuth(l.client, m.c.base+"/v1/topics/cluster/produce", "application/octet-stream",
			strings.NewReader(fmt.Sprintf("page-%d", n)))
		if err != nil {
			l.note("produce %d to node %d: %v", n, m.id, err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			l.note("produce %d to node %d: %s", n, m.id, resp.Status)
			continue
		}
		l.produced.Add(1)
	}
}

func (l *pageLoad) consume() {
	defer l.wg.Done()
	for !l.stopped.Load() {
		r, err := l.ms[0].c.try(http.MethodGet, "/v1/topics/cluster/consume?max=20&wait=200ms", "")
		if err != nil || (r.status != http.StatusOK && r.status != http.StatusNoContent) {
			l.note("consume on node 1: %v %v", r, err)
			return
		}
		if r.status == http.StatusNoContent {
			continue
		}
		var page struct {
			Messages []messageJSON `json:"messages"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			l.note("consume on node 1: %v", err)
			return
		}
		handles := make([]string, len(page.Messages))
		for i, msg := range page.Messages {
			handles[i] = msg.ReceiptHandle
		}
		body, _ := json.Marshal(map[string][]string{"receipt_handles": handles})
		if ar, err := l.ms[0].c.try(http.MethodPost, "/v1/topics/cluster/ack", string(body)); err != nil ||
			ar.status != http.StatusOK || bytes.Contains(ar.body, []byte(`"status":410`)) {
			l.note("ack on node 1: %v %v", ar, err)
		}
		l.consumed.Add(int64(len(handles)))
	}
}

// stop stops the load and waits for it. Idempotent.
func (l *pageLoad) stop() {
	l.stopped.Store(true)
	l.wg.Wait()
	l.client.CloseIdleConnections()
}

func (l *pageLoad) check(t *testing.T) {
	t.Logf("load: %d produced, %d consumed and acked", l.produced.Load(), l.consumed.Load())
	for _, u := range l.unusual {
		t.Errorf("load: %s", u)
	}
}
