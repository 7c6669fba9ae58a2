package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/io/auth"
)

const rootPassword = "root-password"

// securedFixture is a fixture with security on: the root user, an admin "ops", a producer
// "app" (produce on orders and b.*), and a reader "reader" (consume on every topic).
func securedFixture(t *testing.T) *fixture {
	t.Helper()
	return securedFixtureWith(t, auth.New())
}

// securedFixtureWith is securedFixture with the Authenticator a.
func securedFixtureWith(t *testing.T, a *auth.Authenticator) *fixture {
	t.Helper()
	f := newFixture(t, Options{Auth: a})
	f.fb.withUsers(a, rootPassword)
	for _, u := range []string{
		`{"username":"ops","password":"ops-password","grants":[{"action":"admin"}]}`,
		`{"username":"app","password":"app-password","grants":[{"action":"produce","patterns":["orders","b.*"]}]}`,
		`{"username":"reader","password":"reader-password","grants":[{"action":"consume","patterns":["*"]}]}`,
	} {
		if res := f.do(request{method: "POST", path: "/v1/users", body: u, header: as("admin", rootPassword)}); res.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", u, res.status, res.body)
		}
	}
	return f
}

// as is the Authorization header of user with password, plus extra headers.
func as(user, password string, extra ...map[string]string) map[string]string {
	h := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
	for _, e := range extra {
		maps.Copy(h, e)
	}
	return h
}

func TestAccessCredentials(t *testing.T) {
	f := securedFixture(t)
	cases := []struct {
		name   string
		req    request
		status int
	}{
		{"no credentials", request{method: "GET", path: "/v1/topics"}, http.StatusUnauthorized},
		{"wrong password", request{method: "GET", path: "/v1/topics", header: as("app", "nope-nope")}, http.StatusUnauthorized},
		{"unknown user", request{method: "GET", path: "/v1/topics", header: as("ghost", "app-password")}, http.StatusUnauthorized},
		{"not basic", request{method: "GET", path: "/v1/topics", header: map[string]string{"Authorization": "Bearer x"}}, http.StatusUnauthorized},
		{"healthz open", request{method: "GET", path: "/healthz"}, http.StatusOK},
		{"readyz open", request{method: "GET", path: "/readyz"}, http.StatusOK},
		{"metrics needs credentials", request{method: "GET", path: "/metrics"}, http.StatusUnauthorized},
		{"metrics with credentials", request{method: "GET", path: "/metrics", header: as("reader", "reader-password")}, http.StatusOK},
		{"status page open", request{method: "GET", path: "/ui/"}, http.StatusOK},
		{"status page without its slash (redirected)", request{method: "GET", path: "/ui"}, http.StatusOK},
		{"status page GET only", request{method: "POST", path: "/ui/"}, http.StatusMethodNotAllowed},
		{"openapi needs credentials", request{method: "GET", path: "/v1/openapi.json"}, http.StatusUnauthorized},
		{"openapi for any user", request{method: "GET", path: "/v1/openapi.json", header: as("app", "app-password")}, http.StatusOK},
	}
	for _, c := range cases {
		res := f.do(c.req)
		if res.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, res.status, res.body, c.status)
		}
		if c.status == http.StatusUnauthorized && res.header.Get("WWW-Authenticate") != `Basic realm="narad"` {
			t.Errorf("%s: WWW-Authenticate %q", c.name, res.header.Get("WWW-Authenticate"))
		}
	}
}

func TestAccessGrants(t *testing.T) {
	f := securedFixture(t)
	app, reader, ops := as("app", "app-password", octet), as("reader", "reader-password"), as("ops", "ops-password")
	cases := []struct {
		name   string
		req    request
		status int
	}{
		{"produce granted", request{method: "POST", path: "/v1/topics/orders/produce", body: "x", header: app}, http.StatusAccepted},
		{"produce elsewhere", request{method: "POST", path: "/v1/topics/full/produce", body: "x", header: app}, http.StatusForbidden},
		{"produce by a reader", request{method: "POST", path: "/v1/topics/orders/produce", body: "x", header: as("reader", "reader-password", octet)}, http.StatusForbidden},
		{"consume by a producer", request{method: "GET", path: "/v1/topics/full/consume", header: app}, http.StatusForbidden},
		{"consume granted", request{method: "GET", path: "/v1/topics/full/consume", header: reader}, http.StatusOK},
		{"ack by a producer", request{method: "POST", path: "/v1/topics/full/ack", body: oneHandle, header: as("app", "app-password")}, http.StatusForbidden},
		{"create without grant", request{method: "POST", path: "/v1/topics", body: `{"name":"new"}`, header: reader}, http.StatusForbidden},
		{"create by admin", request{method: "POST", path: "/v1/topics", body: `{"name":"new"}`, header: ops}, http.StatusCreated},
		{"delete without grant", request{method: "DELETE", path: "/v1/topics/orders", header: reader}, http.StatusForbidden},
		{"get a topic one sees", request{method: "GET", path: "/v1/topics/orders", header: as("app", "app-password")}, http.StatusOK},
		{"get a topic one does not see", request{method: "GET", path: "/v1/topics/full", header: as("app", "app-password")}, http.StatusForbidden},
		{"cluster by a user", request{method: "GET", path: "/v1/cluster/members", header: reader}, http.StatusForbidden},
		{"forget by a user", request{method: "POST", path: "/v1/cluster/members/2/forget?dry_run=true", header: reader}, http.StatusForbidden},
		{"decommission by a user", request{method: "POST", path: "/v1/cluster/members/2/decommission", header: reader}, http.StatusForbidden},
		{"cancel decommission by a user", request{method: "DELETE", path: "/v1/cluster/members/2/decommission", header: reader}, http.StatusForbidden},
		{"decommission by admin", request{method: "POST", path: "/v1/cluster/members/2/decommission?dry_run=true", header: ops}, http.StatusOK},
		{"moves by a user", request{method: "GET", path: "/v1/cluster/moves", header: reader}, http.StatusForbidden},
		{"move by a user", request{method: "POST", path: "/v1/cluster/moves", header: reader, body: `{"topic":"orders","partition":0,"to":2}`}, http.StatusForbidden},
		{"abort by a user", request{method: "POST", path: "/v1/cluster/moves/orders/1/abort", header: reader}, http.StatusForbidden},
		{"rebalance by a user", request{method: "POST", path: "/v1/cluster/rebalance", header: reader}, http.StatusForbidden},
		{"moves by admin", request{method: "GET", path: "/v1/cluster/moves", header: ops}, http.StatusOK},
		{"forget by admin", request{method: "POST", path: "/v1/cluster/members/2/forget?dry_run=true", header: ops}, http.StatusOK},
		{"users by a user", request{method: "GET", path: "/v1/users", header: reader}, http.StatusForbidden},
		{"users by admin", request{method: "GET", path: "/v1/users", header: ops}, http.StatusOK},
	}
	for _, c := range cases {
		if res := f.do(c.req); res.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, res.status, res.body, c.status)
		}
	}
	res := f.do(request{method: "GET", path: "/v1/topics", header: as("app", "app-password")})
	if res.status != http.StatusOK || !strings.Contains(res.body, `"orders"`) || strings.Contains(res.body, `"full"`) {
		t.Fatalf("a producer's listing: %d %s", res.status, res.body)
	}
}

func TestUsersAPI(t *testing.T) {
	f := securedFixture(t)
	root, ops, app := as("admin", rootPassword), as("ops", "ops-password"), as("app", "app-password")
	cases := []struct {
		name   string
		req    request
		status int
	}{
		{"create by a non-admin", request{method: "POST", path: "/v1/users", body: `{"username":"x","password":"12345678"}`, header: app}, http.StatusForbidden},
		{"exists", request{method: "POST", path: "/v1/users", body: `{"username":"app","password":"12345678"}`, header: ops}, http.StatusConflict},
		{"bad username", request{method: "POST", path: "/v1/users", body: `{"username":"a b","password":"12345678"}`, header: ops}, http.StatusBadRequest},
		{"short password", request{method: "POST", path: "/v1/users", body: `{"username":"x","password":"1234567"}`, header: ops}, http.StatusBadRequest},
		{"long password", request{method: "POST", path: "/v1/users", body: `{"username":"x","password":"` + strings.Repeat("p", 73) + `"}`, header: ops}, http.StatusBadRequest},
		{"bad grant", request{method: "POST", path: "/v1/users", body: `{"username":"x","password":"12345678","grants":[{"action":"admin","patterns":["a"]}]}`, header: ops}, http.StatusBadRequest},
		{"unknown field", request{method: "POST", path: "/v1/users", body: `{"username":"x","password":"12345678","hash":"x"}`, header: ops}, http.StatusBadRequest},
		{"no content type", request{method: "POST", path: "/v1/users", body: `{"username":"x","password":"12345678"}`, header: as("ops", "ops-password", map[string]string{"Content-Type": ""})}, http.StatusUnsupportedMediaType},
		{"admin granted by a non-root", request{method: "POST", path: "/v1/users", body: `{"username":"x","password":"12345678","grants":[{"action":"admin"}]}`, header: ops}, http.StatusForbidden},
		{"get self", request{method: "GET", path: "/v1/users/app", header: app}, http.StatusOK},
		{"get another", request{method: "GET", path: "/v1/users/ops", header: app}, http.StatusForbidden},
		{"get unknown", request{method: "GET", path: "/v1/users/nobody", header: ops}, http.StatusNotFound},
		{"delete root", request{method: "DELETE", path: "/v1/users/admin", header: ops}, http.StatusForbidden},
		{"delete self", request{method: "DELETE", path: "/v1/users/ops", header: ops}, http.StatusForbidden},
		{"delete unknown", request{method: "DELETE", path: "/v1/users/nobody", header: ops}, http.StatusNotFound},
		{"grants of self", request{method: "PUT", path: "/v1/users/ops/grants", body: `{"grants":[]}`, header: ops}, http.StatusForbidden},
		{"grants of root", request{method: "PUT", path: "/v1/users/admin/grants", body: `{"grants":[]}`, header: root}, http.StatusForbidden},
		{"grants missing", request{method: "PUT", path: "/v1/users/app/grants", body: `{}`, header: ops}, http.StatusBadRequest},
		{"own password without current", request{method: "PUT", path: "/v1/users/app/password", body: `{"new_password":"new-app-password"}`, header: app}, http.StatusForbidden},
		{"own password, wrong current", request{method: "PUT", path: "/v1/users/app/password", body: `{"new_password":"new-app-password","current_password":"wrong-one"}`, header: app}, http.StatusForbidden},
		{"another's password by a non-admin", request{method: "PUT", path: "/v1/users/ops/password", body: `{"new_password":"new-ops-password"}`, header: app}, http.StatusForbidden},
		{"grants by admin", request{method: "PUT", path: "/v1/users/reader/grants", body: `{"grants":[{"action":"consume","patterns":["full"]}]}`, header: ops}, http.StatusOK},
	}
	for _, c := range cases {
		if res := f.do(c.req); res.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, res.status, res.body, c.status)
		}
	}
	// A user changes his own password: the old one stops at once, the new one works.
	res := f.do(request{method: "PUT", path: "/v1/users/app/password", body: `{"new_password":"new-app-password","current_password":"app-password"}`, header: app})
	if res.status != http.StatusNoContent {
		t.Fatalf("own password: %d %s", res.status, res.body)
	}
	if res := f.do(request{method: "GET", path: "/v1/users/app", header: app}); res.status != http.StatusUnauthorized {
		t.Fatalf("the old password after the change: %d", res.status)
	}
	res = f.do(request{method: "GET", path: "/v1/users/app", header: as("app", "new-app-password")})
	if res.status != http.StatusOK || res.body != `{"username":"app","grants":[{"action":"produce","patterns":["b.*","orders"]}],"root":false,"created_at_ms":0,"updated_at_ms":0}` {
		t.Fatalf("the new password: %d %s", res.status, res.body)
	}
	// An admin deletes a user: the user's credentials stop at once.
	if res := f.do(request{method: "DELETE", path: "/v1/users/reader", header: ops}); res.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.status, res.body)
	}
	if res := f.do(request{method: "GET", path: "/v1/topics", header: as("reader", "reader-password")}); res.status != http.StatusUnauthorized {
		t.Fatalf("a deleted user: %d", res.status)
	}
	// No answer carries a hash.
	res = f.do(request{method: "GET", path: "/v1/users", header: ops})
	if res.status != http.StatusOK || strings.Contains(res.body, "$2") || strings.Contains(res.body, "hash") {
		t.Fatalf("list: %d %s", res.status, res.body)
	}
}

// Five failed logins of one user, then 429 with Retry-After; another user is unaffected.
// The throttle's clock stands still: bcrypt under the race detector can take longer than
// the 12 s in which a try comes back.
func TestFailedLoginsThrottled(t *testing.T) {
	stopped := time.Unix(1_800_000_000, 0)
	f := securedFixtureWith(t, auth.NewWith(auth.Config{Now: func() time.Time { return stopped }}))
	for i := range 5 {
		if res := f.do(request{method: "GET", path: "/v1/topics", header: as("app", "wrong-password")}); res.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, res.status)
		}
	}
	res := f.do(request{method: "GET", path: "/v1/topics", header: as("app", "app-password")})
	if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "12" {
		t.Fatalf("the sixth try: %d %v", res.status, res.header)
	}
	if res := f.do(request{method: "GET", path: "/v1/topics", header: as("reader", "reader-password")}); res.status != http.StatusOK {
		t.Fatalf("another user: %d", res.status)
	}
}

// Until the replica holds a user, a secured node is not ready: /readyz and every /v1
// route answer 503 (credentials could not be checked, though they may be right).
func TestNotReadyWithoutUsers(t *testing.T) {
	f := newFixture(t, Options{Auth: auth.New()})
	for _, path := range []string{"/readyz", "/v1/topics"} {
		if res := f.do(request{method: "GET", path: path, header: as("admin", rootPassword)}); res.status != http.StatusServiceUnavailable {
			t.Errorf("%s: %d %s", path, res.status, res.body)
		}
	}
	if res := f.do(request{method: "GET", path: "/healthz"}); res.status != http.StatusOK {
		t.Errorf("/healthz: %d", res.status)
	}
}

// The creator of a topic owns it: it produces to, consumes from and sees its topic
// without a produce or consume grant, and nothing more.
func TestCreatorOwnsItsTopic(t *testing.T) {
	f := securedFixture(t)
	if res := f.do(request{method: "POST", path: "/v1/users", header: as("admin", rootPassword),
		body: `{"username":"maker","password":"maker-password","grants":[{"action":"create","patterns":["m*"]}]}`}); res.status != http.StatusCreated {
		t.Fatalf("create maker: %d %s", res.status, res.body)
	}
	maker := as("maker", "maker-password")
	if res := f.do(request{method: "POST", path: "/v1/topics", body: `{"name":"m1"}`, header: maker}); res.status != http.StatusCreated {
		t.Fatalf("maker creates m1: %d %s", res.status, res.body)
	}
	if res := f.do(request{method: "POST", path: "/v1/topics", body: `{"name":"m2"}`, header: as("ops", "ops-password")}); res.status != http.StatusCreated {
		t.Fatalf("ops creates m2: %d %s", res.status, res.body)
	}
	cases := []struct {
		name   string
		req    request
		status int
	}{
		{"produce to its topic", request{method: "POST", path: "/v1/topics/m1/produce", body: "x", header: as("maker", "maker-password", octet)}, http.StatusAccepted},
		{"consume its topic", request{method: "GET", path: "/v1/topics/m1/consume", header: maker}, http.StatusOK},
		{"see its topic", request{method: "GET", path: "/v1/topics/m1", header: maker}, http.StatusOK},
		{"produce to another's", request{method: "POST", path: "/v1/topics/m2/produce", body: "x", header: as("maker", "maker-password", octet)}, http.StatusForbidden},
		{"admin routes", request{method: "GET", path: "/v1/users", header: maker}, http.StatusForbidden},
	}
	for _, c := range cases {
		if res := f.do(c.req); res.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, res.status, res.body, c.status)
		}
	}
}

// A listing filtered by the caller's grants still fills its pages: the server reads on
// past the topics the caller may not see, and the page tokens walk every visible topic
// once.
func TestFilteredListingFillsItsPages(t *testing.T) {
	f := securedFixture(t)
	ops := as("ops", "ops-password", map[string]string{"Content-Type": "application/json"})
	for i := range 5 {
		for _, name := range []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b.%d", i), fmt.Sprintf("c%d", i)} {
			if res := f.do(request{method: "POST", path: "/v1/topics", body: `{"name":"` + name + `"}`, header: ops}); res.status != http.StatusCreated {
				t.Fatalf("create %s: %d %s", name, res.status, res.body)
			}
		}
	}
	var seen []string
	token := ""
	for page := 0; page < 10; page++ {
		res := f.do(request{method: "GET", path: "/v1/topics?limit=2&page_token=" + token, header: as("app", "app-password")})
		var body struct {
			Topics []struct{ Name string } `json:"topics"`
			Next   string                  `json:"next_page_token"`
		}
		if err := json.Unmarshal([]byte(res.body), &body); res.status != http.StatusOK || err != nil {
			t.Fatalf("page %d: %d %s", page, res.status, res.body)
		}
		if body.Next != "" && len(body.Topics) != 2 {
			t.Fatalf("page %d holds %d topics with more to come: %s", page, len(body.Topics), res.body)
		}
		for _, x := range body.Topics {
			seen = append(seen, x.Name)
		}
		if token = body.Next; token == "" {
			break
		}
	}
	if want := []string{"b.0", "b.1", "b.2", "b.3", "b.4", "orders"}; !slices.Equal(seen, want) {
		t.Fatalf("listed %v, want %v", seen, want)
	}
}
