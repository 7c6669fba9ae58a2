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

// StatsResponse answers a StatsRequest with the partitions the owner serves.
type StatsResponse struct {
	ID         uint64
	Status     Status
	Partitions []PartitionStat
}

func (StatsRequest) Kind() Kind  { return KindStatsRequest }
func (StatsResponse) Kind() Kind { return KindStatsResponse }

func (m StatsRequest) valid() bool { return validTopic(m.Topic) }

func (m StatsResponse) valid() bool {
	return m.Status != 0 && m.Status < statusEnd && len(m.Partitions) <= StatsPartitionsMax
}

func (m StatsRequest) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	return appendString16(b, m.Topic)
}

func (m StatsResponse) appendBody(b []byte) []byte {
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
