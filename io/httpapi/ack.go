package httpapi

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/narad/narad/core/node"
)

// Limits of the ack route.
const (
	ackBatchMax     = node.AckBatchMax
	ackBodyBytesMax = 1 << 20 // 100 handles need far less
)

// ackBatchRequest is the body of a batch ack.
type ackBatchRequest struct {
	ReceiptHandles []string `json:"receipt_handles"`
}

// ack serves POST /v1/topics/{topic}/ack. A request whose query names a receipt_handle
// acks that handle (its body is ignored) and answers its status alone: 204, or 410 when
// the lease is no longer valid. Otherwise the body must be {"receipt_handles":[…1..100]}
// and the answer is 200 {"results":[{"status","error"?}…]} in request order. extend=true
// renews the lease(s), extend=0 releases them, no extend settles them.
func (s *Server) ack(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	q, err := parseQuery(r)
	if err != nil {
		return 0, err
	}
	mode, err := ackMode(q)
	if err != nil {
		return 0, err
	}
	if _, single := q["receipt_handle"]; single {
		return s.ackOne(w, r, topic, q.Get("receipt_handle"), mode)
	}
	var req ackBatchRequest
	if err := decodeStrict(w, r, ackBodyBytesMax, &req); err != nil {
		if err == errEmptyBody {
			return 0, errHandleRequired
		}
		return 0, err
	}
	if len(req.ReceiptHandles) == 0 || len(req.ReceiptHandles) > ackBatchMax {
		return 0, badRequest("receipt_handles: 1 to %d handles", ackBatchMax)
	}
	results, err := s.ackResults(r, topic, req.ReceiptHandles, mode)
	if err != nil {
		return 0, err
	}
	out := make([]ackResultJSON, len(results))
	for i, e := range results {
		out[i].Status = http.StatusNoContent
		if e != nil {
			out[i].Status, out[i].Error = statusOf(e)
		}
	}
	return writeJSON(w, http.StatusOK, struct {
		Results []ackResultJSON `json:"results"`
	}{out})
}

var errHandleRequired = &apiError{status: http.StatusBadRequest,
	msg: `receipt_handle is required (or a body {"receipt_handles":[…]})`}

// ackOne acks a single handle and answers its own status.
func (s *Server) ackOne(w http.ResponseWriter, r *http.Request, topic, handle string, mode node.AckMode) (int, error) {
	if handle == "" {
		return 0, errHandleRequired
	}
	results, err := s.ackResults(r, topic, []string{handle}, mode)
	if err != nil {
		return 0, err
	}
	if results[0] != nil {
		return 0, results[0]
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// ackResults calls the broker and checks it answered once per handle.
func (s *Server) ackResults(r *http.Request, topic string, handles []string, mode node.AckMode) ([]error, error) {
	results, err := s.b.Ack(r.Context(), actor(r), topic, handles, mode)
	if err != nil {
		return nil, err
	}
	if len(results) != len(handles) {
		return nil, fmt.Errorf("broker answered %d results for %d receipt handles", len(results), len(handles))
	}
	return results, nil
}

// ackMode reads extend: "true" renews, "0" releases, absent settles; anything else is 400.
func ackMode(q url.Values) (node.AckMode, error) {
	vs, ok := q["extend"]
	if !ok {
		return node.AckSettle, nil
	}
	switch vs[0] {
	case "true":
		return node.AckExtend, nil
	case "0":
		return node.AckRelease, nil
	}
	return 0, badRequest(`extend must be "true" (renew the lease) or "0" (release it)`)
}
