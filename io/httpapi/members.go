package httpapi

import (
	"net/http"
	"strconv"
	"strings"

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

// matchMember finds the pattern of a path under /v1/cluster/members/ and the member id
// in it (not yet validated).
func (s *Server) matchMember(rest string) (*pattern, string) {
	id, sub, _ := strings.Cut(rest, "/")
	if id == "" || sub != "forget" {
		return nil, ""
	}
	return s.forgetPat, id
}

type forgetPartitionJSON struct {
	Topic       string `json:"topic"`
	Partition   uint32 `json:"partition"`
	From        uint64 `json:"from"`
	To          uint64 `json:"to"`
	Epoch       uint32 `json:"epoch"`
	FirstOffset uint64 `json:"first_offset"`
}

type forgetJSON struct {
	Member     uint64                `json:"member"`
	DryRun     bool                  `json:"dry_run"`
	Partitions []forgetPartitionJSON `json:"partitions"`
}

// forget serves POST /v1/cluster/members/{id}/forget?dry_run=true|false (admin): 200 with
// the partitions given up (or that would be, on a dry run); 404 unknown member; 409 a
// live member, a forgotten one, or a guard (the message names it).
func (s *Server) forget(w http.ResponseWriter, r *http.Request, idText string) (int, error) {
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil || id == 0 {
		return 0, badRequest("member id must be a positive integer")
	}
	q, err := parseQuery(r)
	if err != nil {
		return 0, err
	}
	dry := false
	if v, ok := q["dry_run"]; ok {
		if dry, err = strconv.ParseBool(v[0]); err != nil || len(v) != 1 {
			return 0, badRequest("dry_run must be true or false")
		}
	}
	rep, err := s.b.ForgetMember(r.Context(), id, dry)
	if err != nil {
		return 0, err
	}
	out := forgetJSON{Member: rep.Member, DryRun: rep.DryRun, Partitions: []forgetPartitionJSON{}}
	for _, p := range rep.Partitions {
		out.Partitions = append(out.Partitions,
			forgetPartitionJSON{Topic: p.Topic, Partition: p.Partition, From: p.From, To: p.To,
				Epoch: p.Epoch, FirstOffset: p.FirstOffset})
	}
	return writeJSON(w, http.StatusOK, out)
}
