package httpapi

import (
	"net/http"
	"strconv"
	"strings"
)

// The partition moves (admin): GET /v1/cluster/moves lists them, POST /v1/cluster/moves
// starts one by hand ({"topic","partition","to"}), and
// POST /v1/cluster/moves/{topic}/{partition}/abort ends one before its cutover.

type moveJSON struct {
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	From      uint64 `json:"from"`
	To        uint64 `json:"to"`
	State     string `json:"state"` // "copying" or "frozen"
}

type movesJSON struct {
	Moves []moveJSON `json:"moves"`
}

// moveBodyBytesMax bounds a move request's body.
const moveBodyBytesMax = 4096

// moves serves GET /v1/cluster/moves: 200 with every move in progress.
func (s *Server) moves(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	ms, err := s.b.Moves(r.Context())
	if err != nil {
		return 0, err
	}
	out := movesJSON{Moves: []moveJSON{}}
	for _, m := range ms {
		out.Moves = append(out.Moves, moveJSON{Topic: m.Topic, Partition: m.Partition, From: m.From,
			To: m.To, State: m.State})
	}
	return writeJSON(w, http.StatusOK, out)
}

type startMoveRequest struct {
	Topic     string  `json:"topic"`
	Partition *uint32 `json:"partition"`
	To        uint64  `json:"to"`
}

// startMove serves POST /v1/cluster/moves: 202 the move started (it goes on in the
// background: GET /v1/cluster/moves shows it until it is done); 400 a bad body; 404 an
// unknown topic; 409 refused (a move of it already, a destination that is not a live
// member taking partitions, the owner already).
func (s *Server) startMove(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	var req startMoveRequest
	if err := decodeStrict(w, r, moveBodyBytesMax, &req); err != nil {
		return 0, err
	}
	if !validTopicName(req.Topic) || req.Partition == nil || req.To == 0 {
		return 0, badRequest("a move needs a topic, a partition and a destination member (to)")
	}
	if err := s.b.MovePartition(r.Context(), req.Topic, *req.Partition, req.To); err != nil {
		return 0, err
	}
	out := moveJSON{Topic: req.Topic, Partition: *req.Partition, To: req.To, State: "copying"}
	if ms, err := s.b.Moves(r.Context()); err == nil { // the source, as this replica holds it
		for _, m := range ms {
			if m.Topic == req.Topic && m.Partition == *req.Partition {
				out.From, out.State = m.From, m.State
			}
		}
	}
	return writeJSON(w, http.StatusAccepted, out)
}

// matchMove finds the pattern of a path under /v1/cluster/moves/ and the topic and
// partition in it, as "topic/partition" (not yet validated).
func (s *Server) matchMove(rest string) (*pattern, string) {
	if tp, ok := strings.CutSuffix(rest, "/abort"); ok && strings.Count(tp, "/") == 1 {
		return s.abortPat, tp
	}
	return nil, ""
}

// abortMove serves POST /v1/cluster/moves/{topic}/{partition}/abort: 202 the move ends
// (the source keeps the partition); 404 no such topic or no move of it; 400 a bad path.
func (s *Server) abortMove(w http.ResponseWriter, r *http.Request, tp string) (int, error) {
	topic, partText, _ := strings.Cut(tp, "/")
	p, err := strconv.ParseUint(partText, 10, 32)
	if err != nil || !validTopicName(topic) {
		return 0, badRequest("the path names a topic and a partition number")
	}
	if err := s.b.AbortMove(r.Context(), topic, uint32(p)); err != nil {
		return 0, err
	}
	w.WriteHeader(http.StatusAccepted)
	return http.StatusAccepted, nil
}

// rebalance serves POST /v1/cluster/rebalance: 202, the metastore leader evens out the
// partitions over the members that take them, a bounded number of moves at once (GET
// /v1/cluster/moves shows them; none when they are even already).
func (s *Server) rebalance(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	if err := s.b.Rebalance(r.Context()); err != nil {
		return 0, err
	}
	return writeJSON(w, http.StatusAccepted, map[string]string{"state": "rebalancing"})
}
