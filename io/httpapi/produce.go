package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/core/wal"
)

// Limits of the produce routes (API.md).
const (
	payloadBytesMax   = wal.PayloadBytesMax // one message: 1 MiB
	keyBytesMax       = wal.KeyBytesMax
	batchBodyBytesMax = 16 << 20 // one batch produce request
	produceBatchMax   = node.ProduceMax
)

// The single-message produce is the hot path (DESIGN.md section 7): no JSON, no url.Values,
// no response body. Its only allocations are the payload itself (which the broker keeps:
// the node hands the same slice to its dispatcher after the WAL commit, so it cannot come
// from a pool) and the key.

// produce serves POST /v1/topics/{topic}/produce?key=K&partition=P.
func (s *Server) produce(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	if !contentTypeOK(r.Header) {
		return 0, errContentType
	}
	msg, err := produceParams(r.URL.RawQuery)
	if err != nil {
		return 0, err
	}
	if r.ContentLength > payloadBytesMax {
		return 0, errPayloadTooLarge // refuse before reading a byte of it
	}
	if !s.acquire() {
		return 0, node.ErrBusy
	}
	defer s.release()
	msg.Payload, err = readPayload(w, r)
	if err != nil {
		return 0, err
	}
	box := msgBoxes.Get().(*[1]node.ProduceMessage)
	box[0] = msg
	n, err := s.b.Produce(r.Context(), topic, box[:])
	box[0] = node.ProduceMessage{} // do not keep the payload alive from the pool
	msgBoxes.Put(box)
	if err != nil {
		return 0, err
	}
	s.m.produced(topic, n, len(msg.Payload))
	w.WriteHeader(http.StatusAccepted)
	return http.StatusAccepted, nil
}

// msgBoxes recycle the one-element slice a single produce passes to the broker.
var msgBoxes = sync.Pool{New: func() any { return new([1]node.ProduceMessage) }}

// acquire takes a produce permit; false when InFlightMax are in use.
func (s *Server) acquire() bool {
	if s.sem == nil {
		return true
	}
	select {
	case s.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Server) release() {
	if s.sem != nil {
		<-s.sem
	}
}

// contentTypeOK is API.md's rule for a single produce: the Content-Type is
// application/octet-stream or application/json (parameters ignored), or the request
// carries an X-Narad-Client header, whatever its Content-Type.
func contentTypeOK(h http.Header) bool {
	if _, ok := h["X-Narad-Client"]; ok {
		return true
	}
	v := h["Content-Type"]
	if len(v) == 0 {
		return false
	}
	ct, _, _ := strings.Cut(v[0], ";")
	ct = strings.TrimSpace(ct)
	return strings.EqualFold(ct, "application/octet-stream") || strings.EqualFold(ct, "application/json")
}

// produceParams reads key and partition from a raw query without allocating, except for
// the key's bytes and for values that need unescaping. Unknown parameters are ignored; the
// first of repeated ones wins.
func produceParams(rawQuery string) (node.ProduceMessage, error) {
	msg := node.ProduceMessage{Partition: -1}
	seenPart := false
	for q := rawQuery; q != ""; {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		name, value, _ := strings.Cut(pair, "=")
		if !validEscapes(name) || !validEscapes(value) {
			return msg, errBadQuery
		}
		name = unescape(name)
		switch {
		case name == "key" && !msg.HasKey:
			key := unescape(value)
			if len(key) > keyBytesMax {
				return msg, errKeyTooLong
			}
			msg.Key, msg.HasKey = []byte(key), true
		case name == "partition" && !seenPart:
			p, ok := parseNonNegative(unescape(value))
			if !ok {
				return msg, errBadPartition
			}
			msg.Partition, seenPart = p, true
		}
	}
	return msg, nil
}

// readPayload reads a single produce's body: 1 byte to 1 MiB. With a Content-Length the
// body is read straight into a slice of that size (one allocation, no growth); without one
// (chunked) it is read through http.MaxBytesReader into a pooled scratch buffer and copied
// out at its exact size.
func readPayload(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	switch n := r.ContentLength; {
	case n == 0:
		return nil, errEmptyBody
	case n > 0: // at most payloadBytesMax: produce checked it
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, badRequest("reading the body: %v", err)
		}
		return buf, nil
	}
	sp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(sp)
	buf := bytes.NewBuffer((*sp)[:0])
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, payloadBytesMax))
	*sp = buf.Bytes()[:0]
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errPayloadTooLarge
		}
		return nil, badRequest("reading the body: %v", err)
	}
	if buf.Len() == 0 {
		return nil, errEmptyBody
	}
	return bytes.Clone(buf.Bytes()), nil
}

// scratchPool holds the buffers of chunked single produces; each grows to at most
// 1 MiB plus bytes.Buffer's read slack.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// produceBatch serves POST /v1/topics/{topic}/produce/batch.
func (s *Server) produceBatch(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	if !s.acquire() {
		return 0, node.ErrBusy
	}
	defer s.release()
	body, err := readBody(w, r, batchBodyBytesMax)
	if err != nil {
		return 0, err
	}
	msgs, total, err := decodeBatchBody(body)
	if err != nil {
		return 0, err
	}
	n, err := s.b.Produce(r.Context(), topic, msgs)
	if err != nil {
		return 0, err
	}
	s.m.produced(topic, n, total)
	return writeJSON(w, http.StatusAccepted, struct {
		Accepted int `json:"accepted"`
	}{n})
}
