package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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

// batchRequest is the body of POST /v1/topics/{topic}/produce/batch.
type batchRequest struct {
	Messages []batchMessage `json:"messages"`
}

type batchMessage struct {
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding"`
	Key             *string         `json:"key"`
	KeyEncoding     string          `json:"key_encoding"`
	Partition       *int64          `json:"partition"`
}

// produceBatch serves POST /v1/topics/{topic}/produce/batch.
func (s *Server) produceBatch(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	if !s.acquire() {
		return 0, node.ErrBusy
	}
	defer s.release()
	var req batchRequest
	if err := decodeStrict(w, r, batchBodyBytesMax, &req); err != nil {
		return 0, err
	}
	if len(req.Messages) == 0 || len(req.Messages) > produceBatchMax {
		return 0, badRequest("messages: 1 to %d messages", produceBatchMax)
	}
	msgs := make([]node.ProduceMessage, len(req.Messages))
	total := 0
	for i := range req.Messages {
		m, err := req.Messages[i].decode()
		if err != nil {
			return 0, badRequest("message %d: %v", i, err)
		}
		msgs[i] = m
		total += len(m.Payload)
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

// decode validates one message of a batch and turns it into a ProduceMessage.
func (bm *batchMessage) decode() (node.ProduceMessage, error) {
	m := node.ProduceMessage{Partition: -1, Payload: bm.Payload}
	if len(bm.Payload) == 0 {
		return m, errors.New("payload is required")
	}
	switch bm.PayloadEncoding {
	case "":
	case "base64":
		p, err := decodeBase64String(bm.Payload)
		if err != nil {
			return m, errors.New("payload: " + err.Error())
		}
		m.Payload = p
	default:
		return m, errors.New(`payload_encoding must be "base64" or absent`)
	}
	if len(m.Payload) == 0 || len(m.Payload) > payloadBytesMax {
		return m, errors.New("payload must be 1 byte to 1 MiB")
	}
	if bm.Key == nil && bm.KeyEncoding != "" {
		return m, errors.New("key_encoding without a key")
	}
	if bm.Key != nil {
		m.Key, m.HasKey = []byte(*bm.Key), true
		switch bm.KeyEncoding {
		case "":
		case "base64":
			k, err := base64.StdEncoding.DecodeString(*bm.Key)
			if err != nil {
				return m, errors.New("key: invalid base64")
			}
			m.Key = k
		default:
			return m, errors.New(`key_encoding must be "base64" or absent`)
		}
		if len(m.Key) > keyBytesMax {
			return m, errKeyTooLong
		}
	}
	if bm.Partition != nil {
		if *bm.Partition < 0 {
			return m, errors.New("partition must be a non-negative integer")
		}
		m.Partition = *bm.Partition
	}
	return m, nil
}

// decodeBase64String decodes raw, a JSON string of standard padded base64.
func decodeBase64String(raw json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("a base64 payload must be a JSON string")
	}
	p, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("invalid base64")
	}
	return p, nil
}
