package httpapi

import (
	"encoding/base64"
	"net/http"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/node"
)

// Limits of the topic routes.
const (
	topicBodyBytesMax = 64 << 10
	listLimitDefault  = 100
	listLimitMax      = 1000 // a larger limit is clamped to this
)

// createTopicRequest is the body of POST /v1/topics. Absent fields take the broker's
// defaults (API.md: 3 partitions, 7 days, 30 s, 1,024).
type createTopicRequest struct {
	Name                    string  `json:"name"`
	Partitions              *uint32 `json:"partitions"`
	RetentionMs             *int64  `json:"retention_ms"`
	VisibilityTimeoutMs     *int64  `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition *uint32 `json:"max_in_flight_per_partition"`
}

// patchTopicRequest is the body of PATCH /v1/topics/{topic}; absent fields stay.
type patchTopicRequest struct {
	Partitions              *uint32 `json:"partitions"`
	RetentionMs             *int64  `json:"retention_ms"`
	VisibilityTimeoutMs     *int64  `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition *uint32 `json:"max_in_flight_per_partition"`
}

// createTopic serves POST /v1/topics: 201 with the Topic and a Location header.
func (s *Server) createTopic(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	var req createTopicRequest
	if err := decodeStrict(w, r, topicBodyBytesMax, &req); err != nil {
		return 0, err
	}
	if !validTopicName(req.Name) {
		return 0, errBadTopicName
	}
	if !can(r, access.Create, req.Name) {
		return 0, errForbidden
	}
	t, err := s.b.CreateTopic(r.Context(), node.TopicSpec{
		Actor: actor(r), Name: req.Name, Partitions: req.Partitions, RetentionMs: req.RetentionMs,
		VisibilityTimeoutMs: req.VisibilityTimeoutMs, MaxInFlightPerPartition: req.MaxInFlightPerPartition,
	})
	if err != nil {
		return 0, err
	}
	w.Header().Set("Location", "/v1/topics/"+t.Name)
	return writeJSON(w, http.StatusCreated, encodeTopic(t))
}

// listTopics serves GET /v1/topics?limit=&page_token=. The page token is the base64url
// (unpadded) of the last name of the previous page; clients treat it as opaque.
func (s *Server) listTopics(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	q, err := parseQuery(r)
	if err != nil {
		return 0, err
	}
	limit, err := queryInt(q, "limit", listLimitDefault, 1, 1<<31-1)
	if err != nil {
		return 0, err
	}
	limit = min(limit, listLimitMax)
	after := ""
	if tok := q.Get("page_token"); tok != "" {
		name, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || !validTopicName(string(name)) {
			return 0, badRequest("invalid page_token")
		}
		after = string(name)
	}
	out, next, err := s.visibleTopics(r, int(limit), after)
	if err != nil {
		return 0, err
	}
	if next != "" {
		out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return writeJSON(w, http.StatusOK, out)
}

// listScanMax bounds the topics one listing looks at for those its caller may see: past
// it the page holds fewer than limit, and next_page_token goes on from the last looked at.
const listScanMax = 10 * listLimitMax

// visibleTopics fills a page with up to limit topics after after that r's caller may see,
// reading the replica's pages until the page is full, the topics end or listScanMax were
// looked at; next is the last topic looked at, or "" when none is left.
func (s *Server) visibleTopics(r *http.Request, limit int, after string) (topicListJSON, string, error) {
	out := topicListJSON{Topics: []topicJSON{}}
	for scanned := 0; len(out.Topics) < limit && scanned < listScanMax; {
		topics, more, err := s.b.ListTopics(r.Context(), limit, after)
		if err != nil {
			return out, "", err
		}
		for i, t := range topics {
			if len(out.Topics) == limit {
				return out, after, nil
			}
			after, scanned = t.Name, scanned+1
			if sees(r, t.Name) {
				out.Topics = append(out.Topics, encodeTopic(t))
			}
			if i == len(topics)-1 && more == "" {
				return out, "", nil
			}
		}
		if more == "" {
			return out, "", nil
		}
	}
	return out, after, nil
}

// getTopic serves GET /v1/topics/{topic}: the Topic with its partition_stats.
func (s *Server) getTopic(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	t, stats, err := s.b.GetTopic(r.Context(), topic)
	if err != nil {
		return 0, err
	}
	return writeJSON(w, http.StatusOK, encodeTopicDetail(t, stats))
}

// patchTopic serves PATCH /v1/topics/{topic}: 200 with the changed Topic.
func (s *Server) patchTopic(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	var req patchTopicRequest
	if err := decodeStrict(w, r, topicBodyBytesMax, &req); err != nil {
		return 0, err
	}
	t, err := s.b.PatchTopic(r.Context(), topic, node.TopicPatch{Actor: actor(r),
		Partitions: req.Partitions, RetentionMs: req.RetentionMs,
		VisibilityTimeoutMs: req.VisibilityTimeoutMs, MaxInFlightPerPartition: req.MaxInFlightPerPartition,
	})
	if err != nil {
		return 0, err
	}
	return writeJSON(w, http.StatusOK, encodeTopic(t))
}

// deleteTopic serves DELETE /v1/topics/{topic}: 204, and the topic's series leave /metrics.
func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request, topic string) (int, error) {
	if !validTopicName(topic) {
		return 0, errBadTopicName
	}
	if err := s.b.DeleteTopic(r.Context(), actor(r), topic); err != nil {
		return 0, err
	}
	s.m.forgetTopic(topic)
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}
