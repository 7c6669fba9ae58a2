package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/auth"
)

// Access (API.md, "Access"; issue 12). With Options.Auth set every /v1 route and /metrics
// need HTTP Basic credentials of a user of the node's metastore replica: missing or wrong
// ones are 401 with WWW-Authenticate, too many failed logins 429 with Retry-After, and a
// grant the route needs and the user lacks 403. /healthz and /readyz stay open. Without
// Options.Auth (narad serve -dev) every route is open and user commands run as the system.

// perm is what a route needs of the caller.
type perm uint8

const (
	permOpen    perm = iota // no credentials (health, readiness, 404 and 405 answers)
	permUser                // any user (the handler may check more: users, listings, create)
	permAdmin               // the admin grant (cluster routes)
	permSee                 // some grant covering the path's topic
	permProduce             // produce on the path's topic
	permConsume             // consume on the path's topic (ack, nack, extend, replay too)
	permCreate              // create on the path's topic (patch and delete)
)

// retryAfterThrottled is the Retry-After of a 429 for failed logins: one try per 12 s.
const retryAfterThrottled = 12

var (
	errUnauthorized = &apiError{status: http.StatusUnauthorized, msg: "credentials missing or wrong (HTTP Basic)"}
	errThrottled    = &apiError{status: http.StatusTooManyRequests, msg: "too many failed logins for this user; retry later"}
	errForbidden    = &apiError{status: http.StatusForbidden, msg: "forbidden: your grants do not cover this"}
)

type identityKey struct{}

// authorize checks the caller of a route that needs perm on topic and returns the request
// carrying the caller's identity, or the error to answer.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, p perm, topic string) (*http.Request, error) {
	if s.auth == nil || p == permOpen {
		return r, nil
	}
	if err := s.usersReady(); err != nil {
		return r, err
	}
	name, password, ok := r.BasicAuth()
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="narad"`)
		return r, errUnauthorized
	}
	id, err := s.auth.Authenticate(name, password)
	switch err {
	case nil:
	case auth.ErrThrottled:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterThrottled))
		return r, errThrottled
	default:
		w.Header().Set("WWW-Authenticate", `Basic realm="narad"`)
		return r, errUnauthorized
	}
	if !allowed(id, p, topic) {
		return r, errForbidden
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), nil
}

// usersReady is ErrNotReady (503) while security is on and the node's replica holds no
// user yet: a new cluster before its root user applied, or a replica not caught up.
// Every request would be refused 401 then, though its credentials may be right.
func (s *Server) usersReady() error {
	if s.auth != nil && len(s.auth.Users()) == 0 {
		return errNoUsersYet
	}
	return nil
}

var errNoUsersYet = &apiError{status: http.StatusServiceUnavailable, msg: "node not ready: its metastore replica holds no user yet",
	cause: node.ErrNotReady}

func allowed(id auth.Identity, p perm, topic string) bool {
	switch p {
	case permAdmin:
		return id.Allows(access.Admin, "")
	case permSee:
		return id.Sees(topic)
	case permProduce:
		return id.Allows(access.Produce, topic)
	case permConsume:
		return id.Allows(access.Consume, topic)
	case permCreate:
		return id.Allows(access.Create, topic)
	}
	return true
}

// caller is the identity authorize put on r; ok is false when security is off (every
// check passes then, and user commands run as meta.SystemActor).
func caller(r *http.Request) (auth.Identity, bool) {
	id, ok := r.Context().Value(identityKey{}).(auth.Identity)
	return id, ok
}

// actor is the name user commands carry for r's caller.
func actor(r *http.Request) string {
	if id, ok := caller(r); ok {
		return id.Name
	}
	return meta.SystemActor
}

// can reports whether r's caller may do action on topic (always, with security off).
func can(r *http.Request, action access.Action, topic string) bool {
	id, ok := caller(r)
	return !ok || id.Allows(action, topic)
}

// sees reports whether r's caller may see topic in a listing.
func sees(r *http.Request, topic string) bool {
	id, ok := caller(r)
	return !ok || id.Sees(topic)
}

// isAdmin reports whether r's caller holds admin (always, with security off).
func isAdmin(r *http.Request) bool { return can(r, access.Admin, "") }

// needsBodyType reports whether r is a write that carries a body, which API.md's 415
// guard covers: POST, PUT, PATCH and DELETE with a body need a Content-Type of
// application/octet-stream or application/json, or an X-Narad-Client header.
func needsBodyType(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
	}
	return false
}
