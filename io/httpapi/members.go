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
	Draining        bool   `json:"draining"`  // being decommissioned
	MovesIn         int    `json:"moves_in"`  // partition moves in progress to it
	MovesOut        int    `json:"moves_out"` // and from it
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
			Voter: m.Voter, OwnedPartitions: m.OwnedPartitions, Draining: m.Draining,
			MovesIn: m.MovesIn, MovesOut: m.MovesOut}
	}
	return out
}

// matchMember finds the pattern of a path under /v1/cluster/members/ and the member id
// in it (not yet validated).
func (s *Server) matchMember(rest string) (*pattern, string) {
	id, sub, _ := strings.Cut(rest, "/")
	switch {
	case id == "":
	case sub == "forget":
		return s.forgetPat, id
	case sub == "decommission":
		return s.decomPat, id
	}
	return nil, ""
}

type forgetPartitionJSON struct {
	Topic       string `json:"topic"`
	Partition   uint32 `json:"partition"`
	From        uint64 `json:"from"`
	To          uint64 `json:"to"`
	Epoch       uint32 `json:"epoch"`
	FirstOffset uint64 `json:"first_offset"`
	// The member's last mark of the partition (null: none heard at its epoch): its high
	// watermark and oldest offset at last contact, and the records between, given up.
	HighWatermark *uint64 `json:"high_watermark"`
	OldestOffset  *uint64 `json:"oldest_offset"`
	RecordsLost   *uint64 `json:"records_lost"`
}

type forgetJSON struct {
	Member     uint64                `json:"member"`
	DryRun     bool                  `json:"dry_run"`
	Partitions []forgetPartitionJSON `json:"partitions"`
	// RecordsLost sums the partitions' records_lost; Unmarked counts those without a mark.
	RecordsLost uint64 `json:"records_lost"`
	Unmarked    int    `json:"partitions_without_marks"`
}

// forget serves POST /v1/cluster/members/{id}/forget?dry_run=true|false (admin): 200 with
// the partitions given up (or that would be, on a dry run); 404 unknown member; 409 a
// live member, a forgotten one, or a guard (the message names it).
func (s *Server) forget(w http.ResponseWriter, r *http.Request, idText string) (int, error) {
	id, dry, err := memberAndDryRun(r, idText)
	if err != nil {
		return 0, err
	}
	rep, err := s.b.ForgetMember(r.Context(), id, dry)
	if err != nil {
		return 0, err
	}
	out := forgetJSON{Member: rep.Member, DryRun: rep.DryRun, Partitions: []forgetPartitionJSON{}}
	for _, p := range rep.Partitions {
		fp := forgetPartitionJSON{Topic: p.Topic, Partition: p.Partition, From: p.From, To: p.To,
			Epoch: p.Epoch, FirstOffset: p.FirstOffset}
		if p.Marked {
			hw, old, lost := p.HighWatermark, p.Oldest, p.Lost()
			fp.HighWatermark, fp.OldestOffset, fp.RecordsLost = &hw, &old, &lost
			out.RecordsLost += lost
		} else {
			out.Unmarked++
		}
		out.Partitions = append(out.Partitions, fp)
	}
	return writeJSON(w, http.StatusOK, out)
}

// memberAndDryRun parses the member id of a path and its dry_run query (default false).
func memberAndDryRun(r *http.Request, idText string) (id uint64, dry bool, err error) {
	if id, err = memberID(idText); err != nil {
		return 0, false, err
	}
	q, err := parseQuery(r)
	if err != nil {
		return 0, false, err
	}
	if v, ok := q["dry_run"]; ok {
		if dry, err = strconv.ParseBool(v[0]); err != nil || len(v) != 1 {
			return 0, false, badRequest("dry_run must be true or false")
		}
	}
	return id, dry, nil
}

type decommissionJSON struct {
	Member     uint64 `json:"member"`
	DryRun     bool   `json:"dry_run"`
	Partitions int    `json:"partitions"` // the partitions the member owns
	State      string `json:"state,omitempty"`
	Allowed    *bool  `json:"allowed,omitempty"` // a dry run's verdict
	Refusal    string `json:"refusal,omitempty"` // why not, naming the guard
}

// decommission serves POST /v1/cluster/members/{id}/decommission?dry_run=true|false
// (admin): 202 draining started; a dry run 200 with the verdict (allowed, or the refusal
// naming its guard); 404 unknown member; 409 a guard or a removed member.
func (s *Server) decommission(w http.ResponseWriter, r *http.Request, idText string) (int, error) {
	id, dry, err := memberAndDryRun(r, idText)
	if err != nil {
		return 0, err
	}
	rep, err := s.b.DecommissionMember(r.Context(), id, dry)
	if err != nil {
		return 0, err
	}
	out := decommissionJSON{Member: rep.Member, DryRun: rep.DryRun, Partitions: rep.Partitions}
	if !dry {
		out.State = "draining"
		return writeJSON(w, http.StatusAccepted, out)
	}
	allowed := rep.Refusal == ""
	out.Allowed, out.Refusal = &allowed, rep.Refusal
	return writeJSON(w, http.StatusOK, out)
}

// cancelDecommission serves DELETE /v1/cluster/members/{id}/decommission (admin): 204
// the drain stopped; 404 unknown member; 409 not draining.
func (s *Server) cancelDecommission(w http.ResponseWriter, r *http.Request, idText string) (int, error) {
	id, err := memberID(idText)
	if err != nil {
		return 0, err
	}
	if err := s.b.CancelDecommission(r.Context(), id); err != nil {
		return 0, err
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// memberID parses the member id of a path.
func memberID(idText string) (uint64, error) {
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil || id == 0 {
		return 0, badRequest("member id must be a positive integer")
	}
	return id, nil
}
