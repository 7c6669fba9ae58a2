package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Version is the only message version so far.
const Version = 1

// Bounds (doc.go).
const (
	MessageBytesMax  = 16 << 20
	CommitRecordsMax = 65_536
	TopicBytesMax    = 200
	ActorBytesMax    = 64 // a username (core/access.UsernameBytesMax)
	KeyBytesMax      = 4096
	PayloadBytesMax  = 1 << 20
	AddrBytesMax     = 256
	CommandBytesMax  = 4096 // a metastore command, as core/meta encodes it
	ReasonBytesMax   = 1024 // the reason text of a refused proposal
	noKey            = 0xFFFFFFFF
)

// Kind names a message type.
type Kind uint8

// The kinds.
const (
	KindRaft Kind = iota + 1
	KindHeartbeat
	KindCommitRequest
	KindCommitResponse
	KindProposeRequest
	KindProposeResponse
	KindConsumeRequest
	KindConsumeResponse
	KindAckRequest
	KindAckResponse
	KindStatsRequest
	KindStatsResponse
	KindHello
	// KindConsumeResponseTopic is a ConsumeResponse that names the topic incarnation its
	// records were read from (ConsumeResponse.TopicID); kind 8 is one that does not.
	KindConsumeResponseTopic
	// KindStatsResponseTopic is a StatsResponse that names the topic incarnation its
	// partitions' stats are of (StatsResponse.TopicID); kind 12 is one that does not.
	KindStatsResponseTopic
	// KindConsumeRequestAs is a ConsumeRequest that names the user it is made for
	// (ConsumeRequest.Actor), so that the owner checks the grant again; kind 7 is one
	// made for the system (security off).
	KindConsumeRequestAs
	// KindAckRequestAs is an AckRequest that names its user (AckRequest.Actor).
	KindAckRequestAs
	// KindForgotten tells a forgotten member so (Forgotten).
	KindForgotten
	// KindFetchRequest and KindFetchResponse copy a moving partition (fetch.go).
	KindFetchRequest
	KindFetchResponse
)

// Message is one of Raft, Heartbeat, CommitRequest, CommitResponse, ProposeRequest,
// ProposeResponse, ConsumeRequest, ConsumeResponse, AckRequest, AckResponse, StatsRequest,
// StatsResponse, Hello, Forgotten, FetchRequest, FetchResponse, ConsumeCancel.
type Message interface {
	Kind() Kind
	appendBody(b []byte) []byte
}

// Raft carries a raft message in its protobuf wire form; a leader's may carry its table
// of partition marks (marks.go).
type Raft struct {
	Data  []byte
	Table []MemberMarks
}

// Heartbeat says member From is alive and reached at Addr.
// Marks, when not nil, are its partitions' (marks.go).
type Heartbeat struct {
	From  uint64
	Addr  string
	Marks []Mark
}

// Record is one record of a commit.
type Record struct {
	HasKey  bool
	Key     []byte
	Payload []byte
}

// CommitRequest asks a partition's owner to commitDurable records (the dispatcher's
// commit ID at the sender).
type CommitRequest struct {
	ID          uint64
	Topic       string
	Incarnation uint64
	Partition   uint32
	Records     []Record
}

// Code is a commit's outcome.
type Code uint8

// The outcomes.
const (
	CodeOK              Code = iota + 1 // durable and verified at BaseOffset..BaseOffset+Count-1
	CodeRetry                           // nothing was committed; the sender retries later
	CodeIncarnation                     // the topic incarnation is not current here
	CodeNotOwner                        // this node does not own the partition
	CodePartitionFailed                 // the partition failed here (until it reopens); none committed
	codeEnd
)

// CommitResponse answers a CommitRequest.
type CommitResponse struct {
	ID         uint64
	Code       Code
	BaseOffset uint64
	Count      uint32
}

// ProposeRequest forwards a metastore write (a core/meta command, opaque here) from a
// follower to the leader; ID is the follower's.
type ProposeRequest struct {
	ID      uint64
	Command []byte
}

// ProposeCode is a forwarded proposal's outcome.
type ProposeCode uint8

// The outcomes of a forwarded proposal.
const (
	ProposeOK           ProposeCode = iota + 1 // committed and applied on the leader
	ProposeNotLeader                           // the receiver is not the leader: nothing done
	ProposeExists                              // the topic already exists
	ProposeNotFound                            // the topic does not exist
	ProposeInvalid                             // the command is invalid (Reason says why)
	ProposeBusy                                // the leader is over its proposal bound
	ProposeFailed                              // anything else; the outcome may be unknown
	ProposeForbidden                           // the command's actor may not do it (users)
	ProposeUserExists                          // the user already exists
	ProposeUserNotFound                        // the user does not exist
	ProposeRefused                             // a membership change refused (Reason names why)
	ProposeNoMember                            // the member does not exist
	ProposeNoMove                              // no move of the partition (Reason says which)
	proposeCodeEnd
)

// ProposeResponse answers a ProposeRequest.
type ProposeResponse struct {
	ID     uint64
	Code   ProposeCode
	Reason string
}

func (CommitRequest) Kind() Kind   { return KindCommitRequest }
func (CommitResponse) Kind() Kind  { return KindCommitResponse }
func (ProposeRequest) Kind() Kind  { return KindProposeRequest }
func (ProposeResponse) Kind() Kind { return KindProposeResponse }

// Errors of Encode and Decode.
var (
	ErrTooLarge = fmt.Errorf("wire: message over %d bytes", MessageBytesMax)
	ErrInvalid  = errors.New("wire: invalid message")
)

// Encode appends m's bytes to dst. It fails when m breaks a bound.
func Encode(dst []byte, m Message) ([]byte, error) {
	if err := validate(m); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, Version, byte(m.Kind()))
	dst = m.appendBody(dst)
	if len(dst)-start > MessageBytesMax {
		return dst[:start], ErrTooLarge
	}
	return dst, nil
}

func validate(m Message) error {
	switch m := m.(type) {
	case CommitRequest:
		if len(m.Topic) == 0 || len(m.Topic) > TopicBytesMax || !validRecords(m.Records) {
			return ErrInvalid
		}
	case CommitResponse:
		if m.Code == 0 || m.Code >= codeEnd {
			return ErrInvalid
		}
	case Heartbeat:
		if m.From == 0 || len(m.Addr) > AddrBytesMax || !validMarks(m.Marks, HeartbeatMarksMax) {
			return ErrInvalid
		}
	case Raft:
		if !validTable(m.Table) {
			return ErrInvalid
		}
	case ProposeRequest:
		if len(m.Command) == 0 || len(m.Command) > CommandBytesMax {
			return ErrInvalid
		}
	case ProposeResponse:
		if m.Code == 0 || m.Code >= proposeCodeEnd || len(m.Reason) > ReasonBytesMax {
			return ErrInvalid
		}
	case interface{ valid() bool }:
		if !m.valid() {
			return ErrInvalid
		}
	}
	return nil
}

func (m CommitRequest) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = binary.LittleEndian.AppendUint64(b, m.Incarnation)
	b = binary.LittleEndian.AppendUint32(b, m.Partition)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Topic)))
	b = append(b, m.Topic...)
	return appendRecords(b, m.Records)
}

// appendRecords appends count u32 and the records (a commit's, a fetched batch's).
func appendRecords(b []byte, recs []Record) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(recs)))
	for _, r := range recs {
		kl := uint32(noKey)
		if r.HasKey {
			kl = uint32(len(r.Key))
		}
		b = binary.LittleEndian.AppendUint32(b, kl)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Payload)))
		b = append(b, r.Key...)
		b = append(b, r.Payload...)
	}
	return b
}

// validRecords checks 1 to CommitRecordsMax records against the key and payload bounds.
func validRecords(recs []Record) bool {
	if len(recs) == 0 || len(recs) > CommitRecordsMax {
		return false
	}
	for _, r := range recs {
		if len(r.Key) > KeyBytesMax || (!r.HasKey && len(r.Key) > 0) || len(r.Payload) == 0 ||
			len(r.Payload) > PayloadBytesMax {
			return false
		}
	}
	return true
}

func (m CommitResponse) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = append(b, byte(m.Code))
	b = binary.LittleEndian.AppendUint64(b, m.BaseOffset)
	return binary.LittleEndian.AppendUint32(b, m.Count)
}

func (m ProposeRequest) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Command)))
	return append(b, m.Command...)
}

func (m ProposeResponse) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = append(b, byte(m.Code))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Reason)))
	return append(b, m.Reason...)
}
