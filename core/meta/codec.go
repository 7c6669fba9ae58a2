package meta

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/assert"
	"go.etcd.io/raft/v3/raftpb"
)

// Formats inside the files (doc.go). Do not change them; add a new format byte.
const (
	commandFormatV1 = 1
	// CommandBytesMax bounds an encoded command entry; raft's uncommitted tail is bounded
	// by ProposalsMax of them.
	CommandBytesMax = 4096
)

// entryV1 is the JSON of a command entry, after its format byte.
type entryV1 struct {
	Node                    uint64  `json:"node"`   // proposer's raft id
	Seq                     uint64  `json:"seq"`    // proposer's sequence number within its term
	NowNs                   int64   `json:"now_ns"` // proposer's clock: CreatedAtMs comes from it
	Kind                    string  `json:"kind"`
	Name                    string  `json:"name"`
	Partitions              *uint32 `json:"partitions,omitempty"`
	RetentionMs             *int64  `json:"retention_ms,omitempty"`
	VisibilityTimeoutMs     *int64  `json:"visibility_timeout_ms,omitempty"`
	MaxInFlightPerPartition *uint32 `json:"max_in_flight_per_partition,omitempty"`
	Member                  uint64  `json:"member,omitempty"`
	Addr                    string  `json:"addr,omitempty"`
	Alive                   bool    `json:"alive,omitempty"`
	// The move commands' fields (moves.go).
	TopicID uint64 `json:"topic_id,omitempty"`
	Part    uint32 `json:"part,omitempty"`
	Epoch   uint32 `json:"epoch,omitempty"`
	// The user commands' fields (users.go).
	Username string         `json:"username,omitempty"`
	Actor    string         `json:"actor,omitempty"`
	Hash     string         `json:"hash,omitempty"`
	Grants   []access.Grant `json:"grants,omitempty"`
	// Fwd: the id of a forwarded proposal (forwards.go); none for one made on the leader.
	Fwd *fwdJSON `json:"fwd,omitempty"`
}

// fwdJSON is a ProposalID in a command entry.
type fwdJSON struct {
	Origin uint64 `json:"origin"`
	Nonce  uint64 `json:"nonce"`
	Seq    uint64 `json:"seq"`
	Commit uint64 `json:"commit"`
	// Refused: the leader refused the command before the log (a guard); the entry only
	// records the id, so that no copy applies the command after that answer.
	Refused bool `json:"refused,omitempty"`
}

// proposalEntry is a decoded command entry.
type proposalEntry struct {
	Node, Seq uint64
	NowNs     int64
	Cmd       Command
	Fwd       ProposalID // zero: not forwarded
	Refused   bool       // a forward the leader refused before the log (fwdJSON)
}

func encodeCommand(p proposalEntry) []byte {
	e := entryV1{
		Node: p.Node, Seq: p.Seq, NowNs: p.NowNs, Kind: p.Cmd.Kind.String(), Name: p.Cmd.Name,
		Partitions: p.Cmd.Partitions, RetentionMs: p.Cmd.RetentionMs,
		VisibilityTimeoutMs:     p.Cmd.VisibilityTimeoutMs,
		MaxInFlightPerPartition: p.Cmd.MaxInFlightPerPartition,
		Member:                  p.Cmd.Member, Addr: p.Cmd.Addr, Alive: p.Cmd.Alive,
		TopicID: p.Cmd.TopicID, Part: p.Cmd.Part, Epoch: p.Cmd.Epoch,
		Username: p.Cmd.Username, Actor: p.Cmd.Actor, Hash: p.Cmd.Hash, Grants: p.Cmd.Grants,
	}
	if f := p.Fwd; !f.IsZero() {
		e.Fwd = &fwdJSON{
			Origin: f.Origin, Nonce: f.Nonce, Seq: f.Seq, Commit: f.Commit, Refused: p.Refused,
		}
	}
	b, err := json.Marshal(e)
	assert.That(err == nil, "meta: command does not marshal")
	return append([]byte{commandFormatV1}, b...)
}

var errCommand = errors.New("meta: undecodable command entry")

// decodeCommand decodes a command entry. It never panics, whatever b holds.
func decodeCommand(b []byte) (proposalEntry, error) {
	if len(b) < 2 || len(b) > CommandBytesMax || b[0] != commandFormatV1 {
		return proposalEntry{}, errCommand
	}
	var e entryV1
	if err := strictJSON(b[1:], &e); err != nil {
		return proposalEntry{}, errCommand
	}
	p := proposalEntry{Node: e.Node, Seq: e.Seq, NowNs: e.NowNs, Cmd: Command{
		Name: e.Name, Partitions: e.Partitions, RetentionMs: e.RetentionMs,
		VisibilityTimeoutMs: e.VisibilityTimeoutMs, MaxInFlightPerPartition: e.MaxInFlightPerPartition,
		Member: e.Member, Addr: e.Addr, Alive: e.Alive,
		TopicID: e.TopicID, Part: e.Part, Epoch: e.Epoch,
		Username: e.Username, Actor: e.Actor, Hash: e.Hash, Grants: e.Grants,
	}}
	for k := CreateTopic; k <= lastKind; k++ {
		if e.Kind == k.String() {
			p.Cmd.Kind = k
		}
	}
	if f := e.Fwd; f != nil {
		if f.Origin == 0 || f.Nonce == 0 || f.Seq == 0 {
			return proposalEntry{}, errCommand
		}
		p.Fwd = ProposalID{Origin: f.Origin, Nonce: f.Nonce, Seq: f.Seq, Commit: f.Commit}
		p.Refused = f.Refused
	}
	if p.Cmd.Kind == 0 {
		return proposalEntry{}, errCommand
	}
	return p, nil
}

// strictJSON decodes exactly one JSON value with no unknown fields into v.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errBody
	}
	return nil
}

// snapshot is the content of the snap file: the state machine at Index, with the raft
// metadata needed to restart from it.
type snapshot struct {
	Index uint64
	Term  uint64
	Conf  *raftpb.ConfState
	Data  []byte // the state JSON: what raft's Snapshot.Data carries to a follower
	m     *machine
}

type snapJSON struct {
	Index uint64          `json:"index"`
	Term  uint64          `json:"term"`
	Conf  confJSON        `json:"conf_state"`
	State json.RawMessage `json:"state"`
}

type confJSON struct {
	Voters         []uint64 `json:"voters"`
	Learners       []uint64 `json:"learners"`
	VotersOutgoing []uint64 `json:"voters_outgoing"`
	LearnersNext   []uint64 `json:"learners_next"`
	AutoLeave      bool     `json:"auto_leave"`
}

type stateJSON struct {
	Commands uint64       `json:"commands"`
	Topics   []Topic      `json:"topics"`            // sorted by name
	Members  []Member     `json:"members,omitempty"` // sorted by id
	Owners   []ownersJSON `json:"owners,omitempty"`  // sorted by topic id
	Users    []userJSON   `json:"users,omitempty"`   // sorted by name
	// Forgotten: the ids of forgotten members, ascending.
	Forgotten []uint64 `json:"forgotten,omitempty"`
	// Removed: the forgotten ids that a decommission removed, ascending.
	Removed []uint64 `json:"removed,omitempty"`
	// Moves: the partition moves in progress, by topic id then partition.
	Moves []Move `json:"moves,omitempty"`
	// Epochs: the partitions' epochs of the topics that have one above 0, by topic id.
	Epochs []epochsJSON `json:"epochs,omitempty"`
	// CutEpochs: per topic, the epoch each partition's last cutover gave it (0: none),
	// by topic id (moves.go).
	CutEpochs []epochsJSON `json:"cut_epochs,omitempty"`
	// Forwards: the forwarders (forwards.go), by origin.
	Forwards []forwarder `json:"forwards,omitempty"`
}

// epochsJSON is one topic's partition epochs in the snapshot.
type epochsJSON struct {
	Topic  uint64   `json:"topic"`
	Epochs []uint32 `json:"epochs"`
}

// userJSON is a user in the snapshot: User with its hash, which User never marshals.
type userJSON struct {
	User
	Hash string `json:"hash"`
}

type ownersJSON struct {
	Topic  uint64   `json:"topic"`
	Owners []uint64 `json:"owners"`
}

// encodeState serializes the machine: topics sorted by name, so equal states give equal
// bytes on every replica.
func encodeState(m *machine) []byte {
	st := stateJSON{Commands: m.commands, Topics: make([]Topic, 0, len(m.byName))}
	for _, name := range slices.Sorted(maps.Keys(m.byName)) {
		st.Topics = append(st.Topics, m.byName[name])
	}
	for _, id := range slices.Sorted(maps.Keys(m.members)) {
		st.Members = append(st.Members, m.members[id])
	}
	for _, id := range slices.Sorted(maps.Keys(m.owners)) {
		st.Owners = append(st.Owners, ownersJSON{Topic: id, Owners: m.owners[id]})
	}
	for _, name := range slices.Sorted(maps.Keys(m.users)) {
		st.Users = append(st.Users, userJSON{User: m.users[name], Hash: m.users[name].Hash})
	}
	st.Forgotten = slices.Sorted(maps.Keys(m.forgotten))
	st.Removed = slices.Sorted(maps.Keys(m.removed))
	st.Moves = m.sortedMoves()
	for _, id := range slices.Sorted(maps.Keys(m.epochs)) {
		st.Epochs = append(st.Epochs, epochsJSON{Topic: id, Epochs: m.epochs[id]})
	}
	for _, id := range slices.Sorted(maps.Keys(m.cutEpochs)) {
		st.CutEpochs = append(st.CutEpochs, epochsJSON{Topic: id, Epochs: m.cutEpochs[id]})
	}
	st.Forwards = m.sortedForwarders()
	b, err := json.Marshal(st)
	assert.That(err == nil, "meta: state does not marshal")
	return b
}

func encodeSnapshotBody(s snapshot) []byte {
	cs := s.Conf
	b, err := json.Marshal(snapJSON{
		Index: s.Index, Term: s.Term, State: s.Data,
		Conf: confJSON{
			Voters: cs.GetVoters(), Learners: cs.GetLearners(), VotersOutgoing: cs.GetVotersOutgoing(),
			LearnersNext: cs.GetLearnersNext(), AutoLeave: cs.GetAutoLeave(),
		},
	})
	assert.That(err == nil, "meta: snapshot does not marshal")
	return b
}

// decodeSnapshotBody decodes and checks a snapshot: the metadata is sane, every topic is
// valid, names are sorted and unique, incarnation ids are unique and at most Index.
func decodeSnapshotBody(b []byte) (snapshot, error) {
	var sj snapJSON
	if err := strictJSON(b, &sj); err != nil {
		return snapshot{}, errBody
	}
	if sj.Index == 0 || sj.Term == 0 || len(sj.Conf.Voters) == 0 {
		return snapshot{}, errBody
	}
	m, err := decodeState(sj.State, sj.Index)
	if err != nil {
		return snapshot{}, err
	}
	c := sj.Conf
	return snapshot{
		Index: sj.Index, Term: sj.Term, Data: append([]byte(nil), sj.State...), m: m,
		Conf: &raftpb.ConfState{
			Voters: c.Voters, Learners: c.Learners, VotersOutgoing: c.VotersOutgoing,
			LearnersNext: c.LearnersNext, AutoLeave: new(c.AutoLeave),
		},
	}, nil
}

func decodeState(b []byte, index uint64) (*machine, error) {
	var st stateJSON
	if err := strictJSON(b, &st); err != nil || st.Commands > index || len(st.Topics) > TopicsMax {
		return nil, errBody
	}
	m := newMachine()
	m.commands = st.Commands
	for i, t := range st.Topics {
		if i > 0 && t.Name <= st.Topics[i-1].Name {
			return nil, errBody
		}
		c := Command{
			Kind: CreateTopic, Name: t.Name, Partitions: new(t.Partitions), RetentionMs: new(t.RetentionMs),
			VisibilityTimeoutMs: new(
				t.VisibilityTimeoutMs,
			), MaxInFlightPerPartition: new(t.MaxInFlightPerPartition),
		}
		if _, err := c.normalizeForApply(); err != nil || t.ID == 0 || t.ID > index ||
			m.byID[t.ID] != "" ||
			(t.Owner != "" && !access.ValidUsername(t.Owner)) {
			return nil, errBody
		}
		m.add(t)
	}
	if len(st.Members) > MembersMax {
		return nil, errBody
	}
	for i, mb := range st.Members {
		if mb.ID == 0 || (i > 0 && mb.ID <= st.Members[i-1].ID) || mb.Addr == "" ||
			len(mb.Addr) > AddrBytesMax {
			return nil, errBody
		}
		m.members[mb.ID] = mb
	}
	for i, o := range st.Owners {
		name, ok := m.byID[o.Topic]
		if !ok || (i > 0 && o.Topic <= st.Owners[i-1].Topic) || !validOwners(m.byName[name], o.Owners) {
			return nil, errBody
		}
		m.owners[o.Topic] = o.Owners
	}
	if err := decodeUsers(m, st.Users); err != nil {
		return nil, err
	}
	for i, id := range st.Forgotten {
		if _, member := m.members[id]; id == 0 || member || (i > 0 && id <= st.Forgotten[i-1]) {
			return nil, errBody
		}
		m.forgotten[id] = true
	}
	if err := decodeMoves(m, st); err != nil {
		return nil, err
	}
	if err := decodeForwarders(m, st.Forwards, index); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeEpochs checks per-partition epochs of the snapshot (known topics, sorted by id,
// no more than their partitions) and adds them to into.
func decodeEpochs(m *machine, list []epochsJSON, into map[uint64][]uint32) bool {
	for i, e := range list {
		name, ok := m.byID[e.Topic]
		if !ok || (i > 0 && e.Topic <= list[i-1].Topic) ||
			len(e.Epochs) > int(m.byName[name].Partitions) {
			return false
		}
		into[e.Topic] = e.Epochs
	}
	return true
}

// decodeMoves checks the snapshot's removed ids (forgotten ones, sorted) and moves
// (valid in the state loaded so far, sorted by topic id then partition) and adds them.
func decodeMoves(m *machine, st stateJSON) error {
	for i, id := range st.Removed {
		if !m.forgotten[id] || (i > 0 && id <= st.Removed[i-1]) {
			return errBody
		}
		m.removed[id] = true
	}
	if !decodeEpochs(m, st.Epochs, m.epochs) || !decodeEpochs(m, st.CutEpochs, m.cutEpochs) {
		return errBody
	}
	for i, mv := range st.Moves {
		k := moveKey{mv.TopicID, mv.Partition}
		if !m.validMove(mv) || (i > 0 && cmp.Or(cmp.Compare(mv.TopicID, st.Moves[i-1].TopicID),
			cmp.Compare(mv.Partition, st.Moves[i-1].Partition)) <= 0) {
			return errBody
		}
		m.moves[k] = mv
	}
	return nil
}

// decodeUsers checks the snapshot's users (names sorted and unique, hashes, grants in
// their normal form, the root user admin with admin only) and adds them to m.
func decodeUsers(m *machine, users []userJSON) error {
	if len(users) > UsersMax {
		return errBody
	}
	for i, uj := range users {
		u := uj.User
		u.Hash = uj.Hash
		gs, err := access.Normalize(u.Grants)
		sorted := i == 0 || u.Name > users[i-1].Name
		if err != nil || !access.ValidUsername(u.Name) || !sorted || !ValidHash(u.Hash) ||
			!slices.EqualFunc(gs, u.Grants, grantEqual) ||
			(u.Root && (u.Name != access.RootUsername || !access.IsAdmin(gs))) {
			return errBody
		}
		u.Grants = gs
		m.users[u.Name] = u
	}
	return nil
}

func grantEqual(a, b access.Grant) bool {
	return a.Action == b.Action && slices.Equal(a.Patterns, b.Patterns)
}

// validOwners: a non-zero member id per partition of the topic, or fewer owners than
// partitions (a topic grown while no member was alive: the partitions past the owners
// are the local node's, as apply leaves them).
func validOwners(t Topic, owners []uint64) bool {
	return len(owners) <= int(t.Partitions) && !slices.Contains(owners, 0)
}

// EncodeCommand is cmd in the form a follower forwards to the leader (wire.ProposeRequest),
// without an id: its copies are not told apart (EncodeForward is).
func EncodeCommand(cmd Command) []byte { return EncodeForward(cmd, ProposalID{}) }

// EncodeForward is cmd forwarded as the proposal id (forwards.go); a zero id names none.
func EncodeForward(cmd Command, id ProposalID) []byte {
	return encodeCommand(proposalEntry{Cmd: cmd, Fwd: id})
}

// DecodeCommand reads a forwarded command; it never panics, whatever b holds. The leader
// validates it as any proposal (Propose).
func DecodeCommand(b []byte) (Command, error) {
	cmd, _, err := DecodeForward(b)
	return cmd, err
}

// DecodeForward reads a forwarded command and its proposal id (zero when it has none);
// it never panics, whatever b holds.
func DecodeForward(b []byte) (Command, ProposalID, error) {
	p, err := decodeCommand(b)
	return p.Cmd, p.Fwd, err
}
