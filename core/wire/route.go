package wire

import (
	"encoding/binary"

	"github.com/narad/narad/core/assert"
)

// Consumes and acks that reach a node which does not own the partition are routed to the
// owner: ConsumeRequest/ConsumeResponse and AckRequest/AckResponse.

// Bounds of routed consumes and acks.
const (
	ConsumeMessagesMax = 100 // messages of one consume, and handles of one ack
	HandleBytesMax     = 64  // a receipt handle
	// ConsumeBytesMax bounds the messages of one ConsumeResponse (key and payload bytes);
	// an owner leaves out (and releases) what does not fit, but always sends one.
	ConsumeBytesMax = 8 << 20
)

// Status is the outcome of a routed request.
type Status uint8

// The outcomes.
const (
	StatusOK        Status = iota + 1
	StatusNotFound         // the topic does not exist
	StatusNotReady         // the owner cannot serve now (recovering, no leader, shutting down)
	StatusInvalid          // the request is invalid (Reason says why)
	StatusNotOwner         // the receiver does not own the partition asked for
	StatusRemoved          // the offset was removed by retention
	StatusCorrupt          // the record failed its checksum on the owner
	StatusFailed           // anything else (Reason says what)
	StatusForbidden        // the request's user (Actor) lacks the grant on the owner's replica
	statusEnd
)

// ConsumeRequest asks an owner for up to Max messages of Topic: of Partition, or of any
// partition it owns when Partition < 0; HasOffset replays one offset of Partition.
type ConsumeRequest struct {
	Actor     string // the user it is made for; "" for the system (kind 7)
	ID        uint64
	Topic     string
	Partition int64
	Max       uint16
	WaitNs    int64
	HasOffset bool
	Offset    uint64
}

// Delivered is one message of a ConsumeResponse, with its receipt handle (none for a
// replay).
type Delivered struct {
	Partition   uint32
	Offset      uint64
	TimestampMs int64
	HasKey      bool
	Key         []byte
	Payload     []byte
	Handle      string
}

// ConsumeResponse answers a ConsumeRequest. TopicID is the topic incarnation the owner
// read the messages from (0: not said, an older owner's kind 8 frame); a response with
// one is sent as kind 14, so kind 8 keeps its version 1 layout.
type ConsumeResponse struct {
	ID       uint64
	Status   Status
	Reason   string
	Messages []Delivered
	TopicID  uint64
}

// AckRequest settles (0), extends (1) or releases (2) leases by their handles.
type AckRequest struct {
	Actor   string // the user it is made for; "" for the system (kind 9)
	ID      uint64
	Topic   string
	Mode    uint8
	Handles []string
}

// The per-handle results of an AckResponse.
const (
	AckOK        uint8 = iota // done
	AckGone                   // the lease is no longer valid (410)
	AckBadHandle              // the handle is malformed (410)
)

// AckResponse answers an AckRequest: one result per handle, in order, when StatusOK.
type AckResponse struct {
	ID      uint64
	Status  Status
	Reason  string
	Results []uint8
}

func (m ConsumeRequest) Kind() Kind {
	if m.Actor != "" {
		return KindConsumeRequestAs
	}
	return KindConsumeRequest
}
func (m ConsumeResponse) Kind() Kind {
	if m.TopicID != 0 {
		return KindConsumeResponseTopic
	}
	return KindConsumeResponse
}
func (m AckRequest) Kind() Kind {
	if m.Actor != "" {
		return KindAckRequestAs
	}
	return KindAckRequest
}
func (AckResponse) Kind() Kind { return KindAckResponse }

func validTopic(t string) bool { return len(t) > 0 && len(t) <= TopicBytesMax }

func (m ConsumeRequest) valid() bool {
	return len(m.Actor) <= ActorBytesMax && validTopic(m.Topic) &&
		m.Max >= 1 && m.Max <= ConsumeMessagesMax && m.WaitNs >= 0 &&
		m.Partition >= -1 && m.Partition <= 0xFFFFFFFF &&
		(!m.HasOffset || m.Partition >= 0) &&
		(m.HasOffset || m.Offset == 0)
}

func (m ConsumeResponse) valid() bool {
	if m.Status == 0 || m.Status >= statusEnd || len(m.Reason) > ReasonBytesMax ||
		len(m.Messages) > ConsumeMessagesMax {
		return false
	}
	size := 0
	for _, d := range m.Messages {
		size += len(d.Key) + len(d.Payload)
		if len(d.Key) > KeyBytesMax || (!d.HasKey && len(d.Key) > 0) ||
			len(d.Payload) > PayloadBytesMax ||
			len(d.Handle) > HandleBytesMax {
			return false
		}
	}
	return size <= ConsumeBytesMax+PayloadBytesMax+KeyBytesMax // one message always fits
}

func (m AckRequest) valid() bool {
	if len(m.Actor) > ActorBytesMax || !validTopic(m.Topic) || m.Mode > 2 || len(m.Handles) == 0 ||
		len(m.Handles) > ConsumeMessagesMax {
		return false
	}
	for _, h := range m.Handles {
		if len(h) > HandleBytesMax {
			return false
		}
	}
	return true
}

func (m AckResponse) valid() bool {
	if m.Status == 0 || m.Status >= statusEnd || len(m.Reason) > ReasonBytesMax ||
		len(m.Results) > ConsumeMessagesMax {
		return false
	}
	for _, r := range m.Results {
		if r > AckBadHandle {
			return false
		}
	}
	return true
}

func appendString16(b []byte, s string) []byte {
	assert.That(len(s) <= 0xFFFF, "wire: a string over 65535 bytes got past validate")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func (m ConsumeRequest) appendBody(b []byte) []byte {
	if m.Actor != "" {
		b = appendString16(b, m.Actor)
	}
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = appendString16(b, m.Topic)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.Partition))
	b = binary.LittleEndian.AppendUint16(b, m.Max)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.WaitNs))
	b = appendBool(b, m.HasOffset)
	return binary.LittleEndian.AppendUint64(b, m.Offset)
}

func (m ConsumeResponse) appendBody(b []byte) []byte {
	if m.TopicID != 0 {
		b = binary.LittleEndian.AppendUint64(b, m.TopicID)
	}
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = append(b, byte(m.Status))
	b = appendString16(b, m.Reason)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Messages)))
	for _, d := range m.Messages {
		b = binary.LittleEndian.AppendUint32(b, d.Partition)
		b = binary.LittleEndian.AppendUint64(b, d.Offset)
		b = binary.LittleEndian.AppendUint64(b, uint64(d.TimestampMs))
		kl := uint32(noKey)
		if d.HasKey {
			kl = uint32(len(d.Key))
		}
		b = binary.LittleEndian.AppendUint32(b, kl)
		b = append(b, d.Key...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(d.Payload)))
		b = append(b, d.Payload...)
		b = appendString16(b, d.Handle)
	}
	return b
}

func (m AckRequest) appendBody(b []byte) []byte {
	if m.Actor != "" {
		b = appendString16(b, m.Actor)
	}
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = appendString16(b, m.Topic)
	b = append(b, m.Mode)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Handles)))
	for _, h := range m.Handles {
		b = appendString16(b, h)
	}
	return b
}

func (m AckResponse) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = append(b, byte(m.Status))
	b = appendString16(b, m.Reason)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Results)))
	return append(b, m.Results...)
}

func (r *reader) string16() string { return string(r.bytes(int(r.u16()))) }

func (r *reader) boolean() bool {
	v := r.u8()
	if v > 1 {
		r.bad = true
	}
	return v == 1
}

// count reads a u16 count that may not exceed max nor need more than min bytes each.
func (r *reader) count(max, minBytes int) int {
	n := int(r.u16())
	if n > max || n*minBytes > len(r.b) {
		r.bad = true
		return 0
	}
	return n
}

func (r *reader) consumeRequest() ConsumeRequest {
	m := ConsumeRequest{ID: r.u64(), Topic: r.string16()}
	m.Partition, m.Max, m.WaitNs = int64(r.u64()), r.u16(), int64(r.u64())
	m.HasOffset, m.Offset = r.boolean(), r.u64()
	return m
}

// consumeResponseTopic reads kind 14: the incarnation (never 0: that is kind 8), then
// kind 8's body.
func (r *reader) consumeResponseTopic() ConsumeResponse {
	id := r.topicID()
	m := r.consumeResponse()
	m.TopicID = id
	return m
}

func (r *reader) consumeResponse() ConsumeResponse {
	m := ConsumeResponse{ID: r.u64(), Status: Status(r.u8()), Reason: r.string16()}
	n := r.count(ConsumeMessagesMax, 30)
	if n == 0 {
		return m
	}
	m.Messages = make([]Delivered, n)
	for i := range m.Messages {
		d := &m.Messages[i]
		d.Partition, d.Offset, d.TimestampMs = r.u32(), r.u64(), int64(r.u64())
		if kl := r.u32(); kl != noKey {
			if kl > KeyBytesMax {
				r.bad = true
				return m
			}
			d.HasKey, d.Key = true, r.bytes(int(kl))
		}
		pl := r.u32()
		if pl > PayloadBytesMax {
			r.bad = true
			return m
		}
		d.Payload, d.Handle = r.bytes(int(pl)), r.string16()
		if r.bad {
			return m
		}
	}
	return m
}

// actor reads the leading user of kinds 16 and 17: never empty (that is kinds 7 and 9).
func (r *reader) actor() string {
	a := r.string16()
	if a == "" || len(a) > ActorBytesMax {
		r.bad = true
	}
	return a
}

func (r *reader) ackRequest() AckRequest {
	m := AckRequest{ID: r.u64(), Topic: r.string16(), Mode: r.u8()}
	n := r.count(ConsumeMessagesMax, 2)
	for range n {
		m.Handles = append(m.Handles, r.string16())
	}
	return m
}

func (r *reader) ackResponse() AckResponse {
	m := AckResponse{ID: r.u64(), Status: Status(r.u8()), Reason: r.string16()}
	if n := r.count(ConsumeMessagesMax, 1); n > 0 {
		m.Results = r.bytes(n)
	}
	return m
}

// topicID reads the incarnation that leads kinds 14 and 15; 0 names none and is refused.
func (r *reader) topicID() uint64 {
	id := r.u64()
	if id == 0 {
		r.bad = true
	}
	return id
}

// ConsumeCancel tells an owner that the consume its sender routed there under ID was
// answered already (another owner had records first): if it still waits there for
// records, it ends now, answered empty, rather than leasing records nobody takes.
type ConsumeCancel struct {
	ID uint64
}

func (ConsumeCancel) Kind() Kind { return KindConsumeCancel }

func (m ConsumeCancel) appendBody(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(b, m.ID)
}
