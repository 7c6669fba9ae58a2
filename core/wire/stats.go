package wire

import "encoding/binary"

// Partition statistics are kept by each partition's owner: a node answering GET on a
// topic asks the other owners with StatsRequest.

// StatsPartitionsMax bounds the partitions of one StatsResponse.
const StatsPartitionsMax = 4096

// StatsRequest asks an owner for the statistics of its partitions of Topic.
type StatsRequest struct {
	ID    uint64
	Topic string
}

// PartitionStat is one partition's statistics.
type PartitionStat struct {
	Index         uint32
	HighWatermark uint64
	OldestOffset  uint64
	SizeBytes     uint64
	InFlight      uint32
	Failed        bool // failed at its owner, waiting for its reopen
}

// StatsResponse answers a StatsRequest with the partitions the owner serves. TopicID is
// the topic incarnation they belong to in the owner's replica (0: not said, an older
// owner's kind 12 frame): the request names the topic only, and the asker's replica may
// hold another incarnation of that name. A response with one is sent as kind 15, so kind
// 12 keeps its version 1 layout.
type StatsResponse struct {
	ID         uint64
	Status     Status
	Partitions []PartitionStat
	TopicID    uint64
}

func (StatsRequest) Kind() Kind { return KindStatsRequest }
func (m StatsResponse) Kind() Kind {
	if m.TopicID != 0 {
		return KindStatsResponseTopic
	}
	return KindStatsResponse
}

func (m StatsRequest) valid() bool { return validTopic(m.Topic) }

func (m StatsResponse) valid() bool {
	return m.Status != 0 && m.Status < statusEnd && len(m.Partitions) <= StatsPartitionsMax
}

func (m StatsRequest) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	return appendString16(b, m.Topic)
}

func (m StatsResponse) appendBody(b []byte) []byte {
	if m.TopicID != 0 {
		b = binary.LittleEndian.AppendUint64(b, m.TopicID)
	}
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = append(b, byte(m.Status))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Partitions)))
	for _, p := range m.Partitions {
		b = binary.LittleEndian.AppendUint32(b, p.Index)
		b = binary.LittleEndian.AppendUint64(b, p.HighWatermark)
		b = binary.LittleEndian.AppendUint64(b, p.OldestOffset)
		b = binary.LittleEndian.AppendUint64(b, p.SizeBytes)
		b = binary.LittleEndian.AppendUint32(b, p.InFlight)
	}
	return appendFailed(b, m.Partitions)
}

// appendFailed appends, only when some partition failed, their positions in the
// response: a u16 count and a u16 position each. A response with none keeps the layout
// of earlier versions (which refuse the trailer: their owners' stats of a failed
// partition are then missing, as for an unanswered request).
func appendFailed(b []byte, ps []PartitionStat) []byte {
	var at []uint16
	for i, p := range ps {
		if p.Failed {
			at = append(at, uint16(i))
		}
	}
	if len(at) == 0 {
		return b
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(at)))
	for _, i := range at {
		b = binary.LittleEndian.AppendUint16(b, i)
	}
	return b
}

// readFailed reads appendFailed's trailer, if any.
func (r *reader) readFailed(ps []PartitionStat) {
	if len(r.b) == 0 {
		return
	}
	n := r.count(len(ps), 2)
	if n == 0 {
		r.bad = true // a trailer says at least one: one encoding per message
		return
	}
	for range n {
		i := int(r.u16())
		if i >= len(ps) || ps[i].Failed {
			r.bad = true
			return
		}
		ps[i].Failed = true
	}
}

// statsResponseTopic reads kind 15: the incarnation (never 0: that is kind 12), then
// kind 12's body.
func (r *reader) statsResponseTopic() StatsResponse {
	id := r.topicID()
	m := r.statsResponse()
	m.TopicID = id
	return m
}

func (r *reader) statsResponse() StatsResponse {
	m := StatsResponse{ID: r.u64(), Status: Status(r.u8())}
	n := r.count(StatsPartitionsMax, 32)
	if n == 0 {
		return m
	}
	m.Partitions = make([]PartitionStat, n)
	for i := range m.Partitions {
		m.Partitions[i] = PartitionStat{
			Index:         r.u32(),
			HighWatermark: r.u64(),
			OldestOffset:  r.u64(),
			SizeBytes:     r.u64(),
			InFlight:      r.u32(),
		}
	}
	r.readFailed(m.Partitions)
	return m
}

// Hello says node From's process started (Nonce is drawn per process): requests sent to
// an earlier process of From that are still unanswered never will be.
type Hello struct {
	From, Nonce uint64
}

func (Hello) Kind() Kind { return KindHello }

func (m Hello) valid() bool { return m.From != 0 }

func (m Hello) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.From)
	return binary.LittleEndian.AppendUint64(b, m.Nonce)
}

// Forgotten tells node Member that the cluster forgot it (core/meta forget.go): its
// partitions went to others, and it must stop rather than serve its old state. Removed:
// it was removed by a decommission instead (core/meta decommission.go): nothing was
// given up.
type Forgotten struct {
	Member  uint64
	Removed bool
}

func (Forgotten) Kind() Kind { return KindForgotten }

func (m Forgotten) valid() bool { return m.Member != 0 }

func (m Forgotten) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.Member)
	return appendBool(b, m.Removed)
}
