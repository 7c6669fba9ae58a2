// Package statusui is the status page every node serves at GET /ui/: one HTML file with
// its style and script inline (index.html, embedded in the binary), no build step and
// nothing loaded from elsewhere. The page holds no data, so it is served without
// credentials; its script reads the JSON API of API.md with the viewer's credentials,
// which a sign-in form of the page keeps in memory only (a reload asks again) and sends
// as an HTTP Basic Authorization header, never in a URL.
//
// What the page reads, every refresh (2 s, or ?refresh_ms= between 500 and 60000):
// GET /v1/cluster/members and GET /v1/cluster/moves (admin), GET /v1/topics and
// GET /v1/topics/{topic} of each topic it lists (at most 100), and GET /metrics (this
// node's counters). Its chart of the last five minutes shows two rates computed in the
// page from successive samples: records committed per second, from the growth of the
// high watermarks of every partition the viewer sees (cluster-wide), and messages
// delivered per second through this node, from narad_consumed_messages_total of this
// node's /metrics (a browser reaches only the node that served the page: the others are
// other origins).
//
// The page's headers forbid everything but what it needs: a Content-Security-Policy
// allows its one inline script and its one inline style by their SHA-256 hashes
// (computed here from the embedded file), fetches to its own origin, and no framing.
package statusui

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
)

// Path is where the page is served; a GET of PathNoSlash is redirected to it.
const (
	Path        = "/ui/"
	PathNoSlash = "/ui"
)

//go:embed index.html
var page []byte

// header is the page's response header: its type, the policy and no caching (a new
// binary's page is loaded at once).
var header = pageHeader(page)

// Serve writes the page and its headers with status 200.
func Serve(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range header {
		h[k] = v
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(page) // a client gone away: nothing to do
}

// pageHeader builds the header of p. p must hold exactly one <style> and one <script>
// element: anything else is a broken build of this package, and panics at start.
func pageHeader(p []byte) http.Header {
	csp := fmt.Sprintf("default-src 'none'; script-src '%s'; style-src '%s'; connect-src 'self'; img-src data:; "+
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'", inlineHash(p, "script"), inlineHash(p, "style"))
	return http.Header{
		"Content-Type":            {"text/html; charset=utf-8"},
		"Content-Length":          {strconv.Itoa(len(p))},
		"Content-Security-Policy": {csp},
		"Cache-Control":           {"no-cache"},
		"X-Content-Type-Options":  {"nosniff"},
		"Referrer-Policy":         {"no-referrer"},
	}
}

// inlineHash is the CSP source "sha256-…" of the text of p's one element named tag.
func inlineHash(p []byte, tag string) string {
	open, end := []byte("<"+tag+">"), []byte("</"+tag+">")
	if bytes.Count(p, open) != 1 || bytes.Count(p, end) != 1 {
		panic(fmt.Sprintf("statusui: index.html must hold exactly one <%s> and one </%s>", tag, tag))
	}
	_, rest, _ := bytes.Cut(p, open)
	text, _, _ := bytes.Cut(rest, end)
	sum := sha256.Sum256(text)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
