package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// topicNameBytesMax bounds a topic name (API.md: 1–200 characters of [A-Za-z0-9._-]).
const topicNameBytesMax = 200

// validTopicName reports whether name is 1–200 characters of [A-Za-z0-9._-] and is not
// "." or "..".
func validTopicName(name string) bool {
	if len(name) == 0 || len(name) > topicNameBytesMax || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// parseNonNegative parses a decimal integer in 0..MaxInt64, digits only (no sign).
func parseNonNegative(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// validEscapes reports whether every '%' in s starts a two-digit hex escape.
func validEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		i += 2
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unescape decodes a query component whose escapes are valid, allocating only when it
// holds an escape or a '+'.
func unescape(s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s
	}
	u, err := url.QueryUnescape(s)
	if err != nil {
		return s // unreachable after validEscapes
	}
	return u
}

// parseQuery parses a request's query for the routes off the hot path: a malformed query
// is a 400 rather than silently dropped pairs.
func parseQuery(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errBadQuery
	}
	return q, nil
}

// decodeStrict decodes r's body, at most limit bytes, as exactly one JSON value into v:
// an unknown field, a syntax error or trailing data is a 400, an empty body is a 400
// "empty body", and a body over limit is a 413.
func decodeStrict(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return errEmptyBody
		case isMaxBytes(err):
			return err
		}
		return badRequest("invalid JSON body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil && isMaxBytes(err) {
			return err
		}
		return badRequest("invalid JSON body: data after the JSON value")
	}
	return nil
}

// readBody reads r's whole body, at most limit bytes (over it: 413). With a
// Content-Length the body is read into a slice of exactly that size.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	if r.ContentLength >= 0 {
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, badRequest("reading the body: %v", err)
		}
		return buf, nil
	}
	buf, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if isMaxBytes(err) {
			return nil, err
		}
		return nil, badRequest("reading the body: %v", err)
	}
	return buf, nil
}

func isMaxBytes(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// queryInt parses an optional integer parameter in lo..hi; absent: def.
func queryInt(q url.Values, name string, def, lo, hi int64) (int64, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}
