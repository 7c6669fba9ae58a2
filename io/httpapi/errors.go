package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/narad/narad/core/node"
)

// apiError is an error this layer decides itself (a malformed request, a body too large):
// it carries its status and the message clients see.
type apiError struct {
	status int
	msg    string
	cause  error // the broker's error this one answers, if any (errors.Is sees it)
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.cause }

// badRequest returns a 400 with a formatted message.
func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// The layer's fixed errors, allocated once so the hot paths return them for free.
var (
	errNotFound         = &apiError{status: http.StatusNotFound, msg: "not found"}
	errMethodNotAllowed = &apiError{status: http.StatusMethodNotAllowed, msg: "method not allowed"}
	errBadTopicName     = &apiError{status: http.StatusBadRequest, msg: "invalid topic name: 1 to 200 characters of [A-Za-z0-9._-], not \".\" or \"..\""}
	errEmptyBody        = &apiError{status: http.StatusBadRequest, msg: "empty body"}
	errContentType      = &apiError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be application/octet-stream or application/json (or send an X-Narad-Client header)"}
	errPayloadTooLarge  = tooLarge(payloadBytesMax)
	errBadQuery         = &apiError{status: http.StatusBadRequest, msg: "malformed query string"}
	errBadPartition     = &apiError{status: http.StatusBadRequest, msg: "partition must be a non-negative integer"}
	errKeyTooLong       = &apiError{status: http.StatusBadRequest, msg: "key longer than " + strconv.Itoa(keyBytesMax) + " bytes"}
)

func tooLarge(limit int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, msg: "body over " + strconv.FormatInt(limit, 10) + " bytes"}
}

// retryAfterPartitionFailed is the Retry-After, in seconds, of a 503 for a produce pinned
// to a failed partition (its first reopen comes after node.PartitionReopenNs) and of a
// 507 for a produce that found the WAL's device full.
const retryAfterPartitionFailed = 1

// statusTable maps the node's sentinels to statuses; the first match wins, so the more
// specific sentinels come before ErrInvalid, which other errors may wrap too.
var statusTable = []struct {
	err    error
	status int
}{
	{node.ErrTopicNotFound, http.StatusNotFound},
	{node.ErrUserNotFound, http.StatusNotFound},
	{node.ErrMemberNotFound, http.StatusNotFound},
	{node.ErrMoveNotFound, http.StatusNotFound},
	{node.ErrRefused, http.StatusConflict},
	{node.ErrUserExists, http.StatusConflict},
	{node.ErrForbidden, http.StatusForbidden},
	{node.ErrTopicExists, http.StatusConflict},
	{node.ErrPartitionRange, http.StatusBadRequest},
	{node.ErrBusy, http.StatusTooManyRequests},
	{node.ErrWALFailed, http.StatusInternalServerError},
	{node.ErrMetastoreFailed, http.StatusInternalServerError},
	{node.ErrCorrupt, http.StatusInternalServerError},
	{node.ErrShuttingDown, http.StatusServiceUnavailable},
	{node.ErrNotReady, http.StatusServiceUnavailable},
	{node.ErrPartitionFailed, http.StatusServiceUnavailable},
	{node.ErrNoSpace, http.StatusInsufficientStorage},
	{node.ErrLeaseGone, http.StatusGone},
	{node.ErrBadHandle, http.StatusGone},
	{node.ErrOffsetRemoved, http.StatusGone},
	{node.ErrInvalid, http.StatusBadRequest},
	{context.DeadlineExceeded, http.StatusServiceUnavailable},
	{context.Canceled, http.StatusServiceUnavailable},
}

// statusOf maps an error to its HTTP status and the message clients see: this layer's own
// errors carry theirs, a body over its limit is 413, the node's sentinels follow
// statusTable, and anything else is a 500. The message is always err.Error(), so a wrapped
// reason ("invalid request: partitions must grow") reaches the client.
func statusOf(err error) (int, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.msg
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, tooLarge(mbe.Limit).msg
	}
	for _, row := range statusTable {
		if errors.Is(err, row.err) {
			return row.status, err.Error()
		}
	}
	return http.StatusInternalServerError, err.Error()
}

// writeError answers err as {"error": "<message>"} and returns the status it wrote.
func writeError(w http.ResponseWriter, err error) int {
	status, msg := statusOf(err)
	if errors.Is(err, node.ErrPartitionFailed) || errors.Is(err, node.ErrNoSpace) {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterPartitionFailed))
	}
	b := make([]byte, 0, len(msg)+16)
	b = append(b, `{"error":`...)
	b = appendString(b, msg)
	b = append(b, '}')
	return writeJSONBytes(w, status, b)
}
