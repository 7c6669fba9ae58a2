package httpapi

import (
	"net/http"

	"github.com/narad/narad/core/node"
)

type memberJSON struct {
	ID              uint64 `json:"id"`
	Addr            string `json:"addr"`
	Status          string `json:"status"` // "alive" or "dead"
	Leader          bool   `json:"leader"`
	Voter           bool   `json:"voter"` // a raft voter of the metastore (else a learner)
	OwnedPartitions int    `json:"owned_partitions"`
}

type membersJSON struct {
	Members []memberJSON `json:"members"`
}

// members serves GET /v1/cluster/members.
func (s *Server) members(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	ms, err := s.b.Members(r.Context())
	if err != nil {
		return 0, err
	}
	return writeJSON(w, http.StatusOK, encodeMembers(ms))
}

func encodeMembers(ms []node.MemberInfo) membersJSON {
	out := membersJSON{Members: make([]memberJSON, len(ms))}
	for i, m := range ms {
		status := "dead"
		if m.Alive {
			status = "alive"
		}
		out.Members[i] = memberJSON{ID: m.ID, Addr: m.Addr, Status: status, Leader: m.Leader,
			Voter: m.Voter, OwnedPartitions: m.OwnedPartitions}
	}
	return out
}
