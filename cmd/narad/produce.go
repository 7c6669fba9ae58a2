package main

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/narad/narad/core/wal"
	"github.com/narad/narad/io/walshell"
)

// defaultPartitions is the API's default partition count. There is no topic metadata yet,
// so every topic is taken to have it when a key or round-robin picks the partition.
const defaultPartitions = 3

// httpError is a request refused before it reaches the WAL.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

// handleProduce is POST /v1/topics/{topic}/produce?key=K&partition=P: it answers 202,
// with an empty body, only once the record is durable in the WAL.
//
// Without a metastore, unknown topics cannot be detected: every valid name is accepted
// (the API's 404 for an unknown topic comes with topics).
func (s *server) handleProduce(w http.ResponseWriter, r *http.Request) {
	if s.shutting.Load() {
		writeError(w, http.StatusServiceUnavailable, "node shutting down")
		return
	}
	rec, err := s.parseProduce(w, r)
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			he = &httpError{http.StatusInternalServerError, err.Error()}
		}
		writeError(w, he.status, he.msg)
		return
	}
	seq, err := s.wal.Append(r.Context(), rec)
	if err != nil {
		s.appendFailed(w, r, err)
		return
	}
	s.log.Debug("produced", "topic", rec.Topic, "partition", rec.Partition, "seq", seq,
		"bytes", len(rec.Payload))
	w.WriteHeader(http.StatusAccepted)
}

// parseProduce checks a produce request in the API's order of cheap checks first, reads
// the body last, and returns the record to append.
func (s *server) parseProduce(w http.ResponseWriter, r *http.Request) (wal.Record, error) {
	topic := r.PathValue("topic")
	if !validTopic(topic) {
		return wal.Record{}, badRequest("invalid topic name %q: want 1 to %d characters of [A-Za-z0-9._-], not \".\" or \"..\"",
			topic, wal.TopicBytesMax)
	}
	if !contentTypeOK(r.Header) {
		return wal.Record{}, &httpError{http.StatusUnsupportedMediaType,
			"Content-Type must be application/octet-stream or application/json (or send an X-Narad-Client header)"}
	}
	q, err := parseProduceQuery(r.URL.RawQuery)
	if err != nil {
		return wal.Record{}, err
	}
	payload, err := readPayload(w, r)
	if err != nil {
		return wal.Record{}, err
	}
	return wal.Record{
		TimestampMs: time.Now().UnixMilli(),
		// Incarnation stays 0 until topics (and their incarnation ids) exist.
		Partition: s.pickPartition(q),
		Topic:     topic,
		HasKey:    q.hasKey,
		Key:       q.key,
		Payload:   payload,
	}, nil
}

// validTopic: 1 to 200 characters of [A-Za-z0-9._-], not "." or "..".
func validTopic(name string) bool {
	if len(name) == 0 || len(name) > wal.TopicBytesMax || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// contentTypeOK: application/octet-stream or application/json (parameters such as a
// charset allowed), or any Content-Type when the request carries X-Narad-Client.
func contentTypeOK(h http.Header) bool {
	if len(h.Values("X-Narad-Client")) > 0 {
		return true
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && (mt == "application/octet-stream" || mt == "application/json")
}

// produceQuery is what the query string of a produce asks for.
type produceQuery struct {
	pinned    bool // partition given: it wins over the key
	partition uint32
	hasKey    bool
	key       []byte
}

func parseProduceQuery(raw string) (produceQuery, error) {
	var q produceQuery
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return q, badRequest("malformed query string: %v", err)
	}
	for name, vs := range vals {
		if name != "key" && name != "partition" {
			return q, badRequest("unknown query parameter %q", name)
		}
		if len(vs) != 1 {
			return q, badRequest("query parameter %q given %d times", name, len(vs))
		}
	}
	if p, ok := vals["partition"]; ok {
		// A non-negative integer. The check against the topic's partition count comes
		// with topic metadata (the metastore); until then any uint32 is accepted.
		n, err := strconv.ParseUint(p[0], 10, 32)
		if err != nil {
			return q, badRequest("partition must be a non-negative integer, got %q", p[0])
		}
		q.pinned, q.partition = true, uint32(n)
	}
	if k, ok := vals["key"]; ok {
		if len(k[0]) > wal.KeyBytesMax {
			return q, badRequest("key is %d bytes, more than %d", len(k[0]), wal.KeyBytesMax)
		}
		q.hasKey, q.key = true, []byte(k[0])
	}
	return q, nil
}

var errTooLarge = &httpError{http.StatusRequestEntityTooLarge,
	fmt.Sprintf("body over %d bytes", wal.PayloadBytesMax)}

// readPayload reads the body: 1 byte to wal.PayloadBytesMax (1 MiB).
func readPayload(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > wal.PayloadBytesMax {
		return nil, errTooLarge
	}
	body := http.MaxBytesReader(w, r.Body, wal.PayloadBytesMax+1)
	var payload []byte
	var err error
	if r.ContentLength > 0 { // the server ends the body at Content-Length
		payload = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, payload)
	} else {
		payload, err = io.ReadAll(body)
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || len(payload) > wal.PayloadBytesMax:
		return nil, errTooLarge
	case err != nil:
		return nil, badRequest("reading the body: %v", err)
	case len(payload) == 0:
		return nil, badRequest("empty body: a message is 1 to %d bytes", wal.PayloadBytesMax)
	}
	return payload, nil
}

// pickPartition: the pinned partition, else FNV-1a of the key, else round-robin.
func (s *server) pickPartition(q produceQuery) uint32 {
	switch {
	case q.pinned:
		return q.partition
	case q.hasKey:
		h := fnv.New32a()
		_, _ = h.Write(q.key)
		return h.Sum32() % defaultPartitions
	default:
		return uint32((s.rr.Add(1) - 1) % defaultPartitions)
	}
}

// appendFailed answers a produce whose append returned err.
func (s *server) appendFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, wal.ErrFull):
		writeError(w, http.StatusTooManyRequests, "too many produces in flight: the WAL staging area is full; retry later")
	case errors.Is(err, wal.ErrFailed):
		s.log.Error("produce refused: the WAL failed", "err", err)
		writeError(w, http.StatusInternalServerError, "the WAL failed; produce is unavailable until the node restarts")
	case errors.Is(err, walshell.ErrClosed) || s.shutting.Load():
		writeError(w, http.StatusServiceUnavailable, "node shutting down")
	case errors.Is(err, wal.ErrTopicEmpty), errors.Is(err, wal.ErrTopicTooLong),
		errors.Is(err, wal.ErrKeyTooLong), errors.Is(err, wal.ErrPayloadSize):
		writeError(w, http.StatusBadRequest, err.Error()) // checked above; kept for safety
	default:
		if r.Context().Err() != nil { // the client went away before the record was staged
			s.log.Debug("produce abandoned by the client", "err", err)
		} else {
			s.log.Error("produce failed", "err", err)
		}
		writeError(w, http.StatusInternalServerError, "append: "+err.Error())
	}
}
