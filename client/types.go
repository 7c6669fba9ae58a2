package client

import (
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// Topic is the API's Topic; PartitionStats is filled by GetTopic only.
type Topic struct {
	Name                    string           `json:"name"`
	ID                      uint64           `json:"id"` // the incarnation id
	Partitions              uint32           `json:"partitions"`
	RetentionMs             int64            `json:"retention_ms"` // 0: forever
	VisibilityTimeoutMs     int64            `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition uint32           `json:"max_in_flight_per_partition"`
	CreatedAt               int64            `json:"created_at"` // Unix seconds
	PartitionStats          []PartitionStats `json:"partition_stats,omitempty"`
}

// PartitionStats is one partition of GetTopic.
type PartitionStats struct {
	Index         uint32 `json:"index"`
	HighWatermark uint64 `json:"high_watermark"`
	OldestOffset  uint64 `json:"oldest_offset"`
	NextOffset    uint64 `json:"next_offset"`
	OwnerNode     string `json:"owner_node"`
	SizeBytes     int64  `json:"size_bytes"`
	InFlight      int    `json:"in_flight"`
	State         string `json:"state,omitempty"` // "failed" while its files are being reopened
}

// TopicConfig is the body of CreateTopic; a nil field takes the server's default (3
// partitions, 7 days of retention, a 30 s visibility timeout, 1,024 leases in flight per
// partition).
type TopicConfig struct {
	Name                    string  `json:"name"`
	Partitions              *uint32 `json:"partitions,omitempty"`
	RetentionMs             *int64  `json:"retention_ms,omitempty"`
	VisibilityTimeoutMs     *int64  `json:"visibility_timeout_ms,omitempty"`
	MaxInFlightPerPartition *uint32 `json:"max_in_flight_per_partition,omitempty"`
}

// TopicPatch is the body of PatchTopic: the fields to change (partitions only grow).
type TopicPatch struct {
	Partitions              *uint32 `json:"partitions,omitempty"`
	RetentionMs             *int64  `json:"retention_ms,omitempty"`
	VisibilityTimeoutMs     *int64  `json:"visibility_timeout_ms,omitempty"`
	MaxInFlightPerPartition *uint32 `json:"max_in_flight_per_partition,omitempty"`
}

// Ptr returns a pointer to v, for the optional fields of TopicConfig and TopicPatch.
func Ptr[T any](v T) *T { return &v }

// Message is a record delivered by Consume or Replay.
type Message struct {
	Topic     string
	Partition uint32
	Offset    uint64
	// Key is the record's key, nil when it has none.
	Key []byte
	// Payload is the record's bytes. The API sends a record that is valid JSON verbatim
	// and other text as a JSON string, so a record that is itself a JSON string (with its
	// quotes) arrives as that string's text; RawPayload keeps the API's value.
	Payload    []byte
	RawPayload json.RawMessage
	// Base64 is set when the API sent the payload as base64 (it was not UTF-8).
	Base64 bool
	// Timestamp is the commit time, in whole seconds.
	Timestamp time.Time
	// ReceiptHandle settles the lease (Ack, Nack, Extend); "" for a replay.
	ReceiptHandle string
}

// messageJSON is the API's Message.
type messageJSON struct {
	Topic           string          `json:"topic"`
	Partition       uint32          `json:"partition"`
	Offset          uint64          `json:"offset"`
	Key             *string         `json:"key,omitempty"`
	KeyEncoding     string          `json:"key_encoding,omitempty"`
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding,omitempty"`
	Timestamp       int64           `json:"timestamp"`
	ReceiptHandle   string          `json:"receipt_handle,omitempty"`
}

// decode turns the API's encodings into bytes.
func (m messageJSON) decode() (Message, error) {
	out := Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, RawPayload: m.Payload,
		Timestamp: time.Unix(m.Timestamp, 0), ReceiptHandle: m.ReceiptHandle}
	if m.Key != nil {
		out.Key = []byte(*m.Key)
		if m.KeyEncoding == "base64" {
			k, err := base64.StdEncoding.DecodeString(*m.Key)
			if err != nil {
				return Message{}, err
			}
			out.Key = k
		}
	}
	var s string
	switch {
	case m.PayloadEncoding == "base64":
		if err := json.Unmarshal(m.Payload, &s); err != nil {
			return Message{}, err
		}
		p, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return Message{}, err
		}
		out.Payload, out.Base64 = p, true
	case len(m.Payload) > 0 && m.Payload[0] == '"':
		if err := json.Unmarshal(m.Payload, &s); err != nil {
			return Message{}, err
		}
		out.Payload = []byte(s)
	default:
		out.Payload = []byte(m.Payload)
	}
	return out, nil
}

// MarshalJSON writes the API's Message shape (what `narad consume` prints).
func (m Message) MarshalJSON() ([]byte, error) {
	j := messageJSON{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Payload: m.RawPayload,
		Timestamp: m.Timestamp.Unix(), ReceiptHandle: m.ReceiptHandle}
	if m.Base64 {
		j.PayloadEncoding = "base64"
	}
	if m.Key != nil {
		k := string(m.Key)
		if !utf8.Valid(m.Key) {
			k, j.KeyEncoding = base64.StdEncoding.EncodeToString(m.Key), "base64"
		}
		j.Key = &k
	}
	if j.Payload == nil {
		j.Payload = json.RawMessage("null")
	}
	return json.Marshal(j)
}

// Grant is an action over topic patterns: "produce", "consume" (with ack, nack, extend and
// replay), "create" (with patch and delete) over exact names or prefixes ending in "*";
// "admin" takes no patterns and covers everything.
type Grant struct {
	Action   string   `json:"action"`
	Patterns []string `json:"patterns,omitempty"`
}

// User is the API's User; no answer carries a password or its hash.
type User struct {
	Username    string  `json:"username"`
	Grants      []Grant `json:"grants"`
	Root        bool    `json:"root"`
	CreatedAtMs int64   `json:"created_at_ms"`
	UpdatedAtMs int64   `json:"updated_at_ms"`
}

// Member is one member of GET /v1/cluster/members.
type Member struct {
	ID              uint64 `json:"id"`
	Addr            string `json:"addr"`
	Status          string `json:"status"` // "alive" or "dead"
	Leader          bool   `json:"leader"` // the metastore leader
	Voter           bool   `json:"voter"`
	OwnedPartitions int    `json:"owned_partitions"`
	Draining        bool   `json:"draining"`
	MovesIn         int    `json:"moves_in"`
	MovesOut        int    `json:"moves_out"`
}

// Move is a partition move in progress.
type Move struct {
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	From      uint64 `json:"from"`
	To        uint64 `json:"to"`
	State     string `json:"state"` // "copying" or "frozen"
}

// Decommission is the answer of Decommission: on a dry run Allowed and, when refused,
// Refusal (naming the guard); otherwise State "draining".
type Decommission struct {
	Member     uint64 `json:"member"`
	DryRun     bool   `json:"dry_run"`
	Partitions int    `json:"partitions"`
	State      string `json:"state,omitempty"`
	Allowed    *bool  `json:"allowed,omitempty"`
	Refusal    string `json:"refusal,omitempty"`
}

// Forget is the answer of Forget: the partitions given up (or that would be).
type Forget struct {
	Member                 uint64            `json:"member"`
	DryRun                 bool              `json:"dry_run"`
	Partitions             []ForgetPartition `json:"partitions"`
	RecordsLost            uint64            `json:"records_lost"`
	PartitionsWithoutMarks int               `json:"partitions_without_marks"`
}

// ForgetPartition is one partition a forgotten member gives up, with its marks at last
// contact (nil: none heard at its epoch).
type ForgetPartition struct {
	Topic         string  `json:"topic"`
	Partition     uint32  `json:"partition"`
	From          uint64  `json:"from"`
	To            uint64  `json:"to"`
	Epoch         uint32  `json:"epoch"`
	FirstOffset   uint64  `json:"first_offset"`
	HighWatermark *uint64 `json:"high_watermark"`
	OldestOffset  *uint64 `json:"oldest_offset"`
	RecordsLost   *uint64 `json:"records_lost"`
}
