package statusui

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestServe: the page comes with its type and a policy whose hashes are those of its one
// script and its one style (a policy that does not match would block them: the page would
// show nothing and the browser test would time out rather than say why).
func TestServe(t *testing.T) {
	w := httptest.NewRecorder()
	Serve(w)
	res := w.Result()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("status %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if cl := res.Header.Get("Content-Length"); cl != fmt.Sprint(len(page)) {
		t.Errorf("Content-Length %q, want %d", cl, len(page))
	}
	body := w.Body.String()
	if body != string(page) || !strings.HasPrefix(body, "<!doctype html>") {
		t.Fatalf("body is not the embedded page: %.60q", body)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, tag := range []string{"script", "style"} {
		m := regexp.MustCompile(`(?s)<` + tag + `>(.*)</` + tag + `>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no <%s> in the page", tag)
		}
		sum := sha256.Sum256([]byte(m[1]))
		want := tag + "-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(csp, want) {
			t.Errorf("policy %q lacks %q", csp, want)
		}
	}
	for _, want := range []string{"default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'", "form-action 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("policy %q lacks %q", csp, want)
		}
	}
}

// TestPageTalksToTheAPIOnly: the page loads nothing from elsewhere and puts no credentials
// in a URL (they go in the Authorization header).
func TestPageTalksToTheAPIOnly(t *testing.T) {
	text := strings.ReplaceAll(string(page), `"http://www.w3.org/2000/svg"`, "") // a name, not a request
	for _, bad := range []string{"http://", "https://", "//cdn", "src=", "@import", "localStorage", "sessionStorage",
		"document.cookie", "innerHTML"} {
		if strings.Contains(text, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
}

func TestInlineHashWantsOneElement(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("two scripts did not panic")
		}
	}()
	inlineHash([]byte("<script>a</script><script>b</script>"), "script")
}
