package httpapi

import (
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/narad/narad/core/node"
)

// Limits of the consume route (API.md).
const (
	consumeMax = node.ConsumeMax                    // messages per consume with max
	waitMax    = time.Duration(node.ConsumeWaitMax) // a longer wait is clamped to this
)

// consume serves GET /v1/topics/{topic}/consume?wait=D&partition=P&max=N&offset=O.
// Without max the answer is one Message; with max it is {"messages":[…]}; 204 when the
// broker found nothing within the wait.
func (s *Server) consume(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	q, err := parseQuery(r)
	if err != nil {
		return 0, err
	}
	req, batch, err := consumeRequest(w, q, topic)
	if err != nil {
		return 0, err
	}
	req.Actor = actor(r)
	msgs, err := s.b.Consume(r.Context(), req)
	if err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return http.StatusNoContent, nil
	}
	if !batch {
		msgs = msgs[:1] // the broker was asked for one
	}
	total := 0
	for i := range msgs {
		total += len(msgs[i].Payload)
	}
	s.m.consumed(topic, len(msgs), total)
	if !batch {
		return writeJSONBytes(w, http.StatusOK, appendMessage(make([]byte, 0, total*2+256), &msgs[0])), nil
	}
	b := make([]byte, 0, total*2+256*len(msgs)+16)
	b = append(b, `{"messages":[`...)
	for i := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, &msgs[i])
	}
	b = append(b, "]}"...)
	return writeJSONBytes(w, http.StatusOK, b), nil
}

// consumeRequest reads a consume's parameters: wait (a Go duration, 0s by default, clamped
// to 10 s with the header X-Narad-Wait-Clamped: true), partition, max (1..100; its presence
// asks for the batch answer) and offset (a replay; needs partition).
func consumeRequest(w http.ResponseWriter, q url.Values, topic string) (node.ConsumeRequest, bool, error) {
	req := node.ConsumeRequest{Topic: topic, Partition: -1, Max: 1}
	if vs, ok := q["wait"]; ok {
		d, err := time.ParseDuration(vs[0])
		if err != nil || d < 0 {
			return req, false, badRequest("wait must be a non-negative Go duration such as 5s or 250ms")
		}
		if d > waitMax {
			d = waitMax
			w.Header().Set("X-Narad-Wait-Clamped", "true")
		}
		req.WaitNs = int64(d)
	}
	if vs, ok := q["partition"]; ok {
		p, ok := parseNonNegative(vs[0])
		if !ok {
			return req, false, errBadPartition
		}
		req.Partition = p
	}
	_, batch := q["max"]
	n, err := queryInt(q, "max", 1, 1, consumeMax)
	if err != nil {
		return req, false, err
	}
	req.Max = int(n)
	if vs, ok := q["offset"]; ok {
		if req.Partition < 0 {
			return req, false, badRequest("offset requires partition")
		}
		o, ok := parseNonNegative(vs[0])
		if !ok {
			return req, false, badRequest("offset must be an integer from 0 to %d", int64(math.MaxInt64))
		}
		req.HasOffset, req.Offset = true, uint64(o)
	}
	return req, batch, nil
}
