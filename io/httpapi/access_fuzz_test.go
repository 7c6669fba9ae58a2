package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/narad/narad/io/auth"
)

// fuzzServer is a secured Server on the fake broker with the root user, served in process.
func fuzzServer(t testing.TB) *Server {
	a := auth.New()
	fb := newFakeBroker()
	fb.addTopic("orders", 1)
	fb.withUsers(a, rootPassword)
	return New(fb, Options{Auth: a, Logger: discardLogger()})
}

// FuzzAuthorizationHeader: whatever the Authorization header holds, the answer is 401,
// 429 or (for root's own credentials) 200, and nothing panics.
func FuzzAuthorizationHeader(f *testing.F) {
	for _, h := range []string{"", "Basic", "Basic ", "Basic YWRtaW46cm9vdC1wYXNzd29yZA==", "Basic Og==",
		"basic YTpi", "Bearer x", "Basic !!!", "Basic " + strings.Repeat("A", 200)} {
		f.Add(h)
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, h string) {
		req := httptest.NewRequest("GET", "/v1/topics", nil)
		req.Header.Set("Authorization", h)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		switch w.Code {
		case http.StatusUnauthorized, http.StatusTooManyRequests:
		case http.StatusOK:
			if user, _, _ := req.BasicAuth(); user != "admin" {
				t.Fatalf("200 for %q", h)
			}
		default:
			t.Fatalf("%q: %d %s", h, w.Code, w.Body)
		}
	})
}

// FuzzUsersBody: whatever a users request carries, the answer is a 2xx or a 4xx, never a
// 5xx, and no answer carries a hash.
func FuzzUsersBody(f *testing.F) {
	for _, b := range []string{`{"username":"u1","password":"12345678","grants":[{"action":"produce","patterns":["a*"]}]}`,
		`{"grants":[{"action":"admin"}]}`, `{"new_password":"abcdefgh"}`, `{}`, `[]`, `{"username":"`, `null`} {
		f.Add("POST", "/v1/users", b)
		f.Add("PUT", "/v1/users/u1/grants", b)
		f.Add("PUT", "/v1/users/u1/password", b)
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if method != "POST" && method != "PUT" && method != "DELETE" && method != "GET" {
			return
		}
		if !strings.HasPrefix(path, "/v1/users") || strings.IndexFunc(path, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-", c))
		}) >= 0 {
			return // a path an HTTP client could not send
		}
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.SetBasicAuth("admin", rootPassword)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code >= 500 || strings.Contains(w.Body.String(), "$2a$") {
			t.Fatalf("%s %s %q: %d %s", method, path, body, w.Code, w.Body)
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
