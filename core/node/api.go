package node

import "errors"

// The client-facing contract of a node: what the HTTP layer asks and what it gets back.
// Errors are sentinel values that the HTTP layer maps to status codes (API.md).
var (
	ErrTopicNotFound   = errors.New("topic not found")             // 404
	ErrTopicExists     = errors.New("topic already exists")        // 409
	ErrInvalid         = errors.New("invalid request")             // 400 (wrapped with the reason)
	ErrPartitionRange  = errors.New("partition out of range")      // 400
	ErrBusy            = errors.New("over the in-flight cap")      // 429
	ErrWALFailed       = errors.New("the write-ahead log failed")  // 500
	ErrShuttingDown    = errors.New("node shutting down")          // 503
	ErrNotReady        = errors.New("node not ready")              // 503
	ErrLeaseGone       = errors.New("lease no longer valid")       // 410
	ErrOffsetRemoved   = errors.New("offset removed by retention") // 410
	ErrCorrupt         = errors.New("record failed its checksum")  // 500
	ErrMetastoreFailed = errors.New("the metastore failed")        // 500
	ErrBadHandle       = errors.New("malformed receipt handle")    // 410: treat as not valid
	ErrForbidden       = errors.New("forbidden")                   // 403: the actor may not do this
	ErrUserExists      = errors.New("user already exists")         // 409
	ErrUserNotFound    = errors.New("user not found")              // 404
	ErrMemberNotFound  = errors.New("member not found")            // 404
	ErrMoveNotFound    = errors.New("no move of that partition")   // 404
	// ErrRefused: a membership change refused (a live member, a forgotten id, a guard;
	// the message names which): 409.
	ErrRefused = errors.New("refused")
	// ErrPartitionFailed: a produce pinned to a partition this node owns, which failed
	// (a failed fdatasync or read-back) and waits for its reopen. 503 with Retry-After.
	ErrPartitionFailed = errors.New("partition failed, reopening") // 503
	// ErrNoSpace: the ingress WAL's device is full; nothing of the produce was written.
	// 507 with Retry-After.
	ErrNoSpace = errors.New("no space left on the device") // 507
	// ErrNotCommitted: a synchronous produce's commit failed or timed out (not an HTTP
	// answer: ProduceSync only). Its messages may or may not be stored.
	ErrNotCommitted = errors.New("not committed at the partition's owner")
)

// ProduceMessage is one message of a produce: Partition < 0 means none was pinned.
type ProduceMessage struct {
	Key       []byte
	HasKey    bool
	Partition int64
	Payload   []byte
}

// ConsumeRequest takes leases (or, with HasOffset, replays one record without a lease).
type ConsumeRequest struct {
	// Actor is the user the request is made for, whose consume grant the HTTP layer
	// checked; an owner serving it for another node checks it again from its own replica.
	// "": the system (security off).
	Actor     string
	Topic     string
	Partition int64 // < 0: any partition
	Max       int   // 1..ConsumeMax
	WaitNs    int64 // long-poll bound, already clamped by the caller
	HasOffset bool
	Offset    uint64
}

// Message is one delivered record. TopicID is the topic incarnation it was read from
// (the HTTP layer does not show it; the simulators check it against the produce).
type Message struct {
	Topic         string
	TopicID       uint64
	Partition     uint32
	Offset        uint64
	Key           []byte
	HasKey        bool
	Payload       []byte
	TimestampMs   int64 // commit time
	ReceiptHandle string
}

// AckMode says what an ack does to a lease.
type AckMode uint8

// Ack modes.
const (
	AckSettle  AckMode = iota // settle: never delivered again
	AckExtend                 // renew for a full visibility timeout
	AckRelease                // nack: deliverable again at once
)

// TopicSpec creates a topic; zero optional fields take the API's defaults.
type TopicSpec struct {
	Actor                   string // who asks (meta.SystemActor with security off), checked by meta
	Name                    string
	Partitions              *uint32
	RetentionMs             *int64
	VisibilityTimeoutMs     *int64
	MaxInFlightPerPartition *uint32
}

// TopicPatch changes a topic; nil fields stay.
type TopicPatch struct {
	Actor                   string // who asks, as in TopicSpec
	Partitions              *uint32
	RetentionMs             *int64
	VisibilityTimeoutMs     *int64
	MaxInFlightPerPartition *uint32
}

// Topic is a topic as the API shows it.
type Topic struct {
	Name                    string
	ID                      uint64
	Partitions              uint32
	RetentionMs             int64
	VisibilityTimeoutMs     int64
	MaxInFlightPerPartition uint32
	CreatedAtMs             int64
}

// PartitionStats is one partition's line in GET /v1/topics/{topic}.
type PartitionStats struct {
	Index         uint32
	HighWatermark uint64
	OldestOffset  uint64
	NextOffset    uint64
	OwnerNode     string
	SizeBytes     int64
	InFlight      int
	Failed        bool // failed at its owner (a failed fdatasync or read-back), waiting for its reopen
}

// Limits of the API that the node enforces too.
const (
	ConsumeMax     = 100 // messages per consume
	AckBatchMax    = 100 // receipt handles per batch ack
	ProduceMax     = 1000
	ConsumeWaitMax = 10_000_000_000 // 10 s
)

// Refused reports whether a produce answered err was refused before any of its messages
// reached the WAL: none of them will ever be delivered. (ErrBusy is not such an answer: a
// batch can be refused by the WAL's staging bound after some of its messages were
// staged.) The simulators' histories rest on it.
func Refused(err error) bool {
	for _, e := range []error{
		ErrTopicNotFound, ErrInvalid, ErrPartitionRange, ErrNotReady, ErrPartitionFailed, ErrNoSpace,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
