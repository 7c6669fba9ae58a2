package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error is a node's answer with an error status: the status code and the message of the
// API's {"error": "..."} body. Match a class of answers with errors.Is and the sentinels
// below (errors.Is(err, client.ErrNotFound)), or read Status through errors.As.
type Error struct {
	Status     int           // the HTTP status code
	Message    string        // the server's message ("" when the body carried none)
	RetryAfter time.Duration // the answer's Retry-After, 0 when absent
	Method     string        // the request's method
	Path       string        // the request's path, without the query
	Node       string        // the base URL of the node that answered
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), msg)
}

// Is matches the sentinel of e's status (ErrNotFound for 404, and so on).
func (e *Error) Is(target error) bool {
	var s *statusError
	return errors.As(target, &s) && s.status == e.Status
}

// statusError is a sentinel: it stands for every *Error of its status.
type statusError struct {
	status int
}

func (s *statusError) Error() string {
	return fmt.Sprintf("narad: %d %s", s.status, http.StatusText(s.status))
}

// The sentinels of the statuses the API answers, for errors.Is.
var (
	ErrBadRequest          error = &statusError{http.StatusBadRequest}            // 400: malformed or invalid request
	ErrUnauthorized        error = &statusError{http.StatusUnauthorized}          // 401: missing or wrong credentials
	ErrForbidden           error = &statusError{http.StatusForbidden}             // 403: a grant is missing
	ErrNotFound            error = &statusError{http.StatusNotFound}              // 404: unknown topic, user, member or move
	ErrConflict            error = &statusError{http.StatusConflict}              // 409: exists already, or a guard refused
	ErrGone                error = &statusError{http.StatusGone}                  // 410: lease no longer valid, or offset removed by retention
	ErrTooLarge            error = &statusError{http.StatusRequestEntityTooLarge} // 413: a body over its limit
	ErrUnsupportedMedia    error = &statusError{http.StatusUnsupportedMediaType}  // 415: missing Content-Type
	ErrTooManyRequests     error = &statusError{http.StatusTooManyRequests}       // 429: over a cap, or too many failed logins
	ErrInternal            error = &statusError{http.StatusInternalServerError}   // 500: the node failed (a produce may be stored)
	ErrUnavailable         error = &statusError{http.StatusServiceUnavailable}    // 503: shutting down, no quorum, a move's freeze
	ErrInsufficientStorage error = &statusError{http.StatusInsufficientStorage}   // 507: the node's disk is full (nothing stored)
)

// StatusOf is the HTTP status of the *Error in err's chain, 0 when there is none (a
// transport error, a cancelled context).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// NodesError is returned when no node answered: every attempt failed before an HTTP
// answer (connection refused, reset, timed out). Err is the last attempt's error.
type NodesError struct {
	Attempts int
	Err      error
}

func (e *NodesError) Error() string {
	return fmt.Sprintf("no node answered (%d attempts): %v", e.Attempts, e.Err)
}

func (e *NodesError) Unwrap() error { return e.Err }
