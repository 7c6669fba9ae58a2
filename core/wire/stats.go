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
	return b
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
		m.Partitions[i] = PartitionStat{Index: r.u32(), HighWatermark: r.u64(), OldestOffset: r.u64(), SizeBytes: r.u64(), InFlight: r.u32()}
	}
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
