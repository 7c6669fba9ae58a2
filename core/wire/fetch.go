package wire

import "encoding/binary"

// A partition move's copy (core/node move.go): the destination asks the source for the
// partition's batches from an offset on, and the source answers with whole batches at
// their offsets and commit times, its oldest offset and high-watermark, whether it is
// frozen (takes no commit: the high-watermark is final), and, when frozen and the copy
// has reached it, the ack state that moves with the partition.

// Bounds of a fetch: the batches of one answer, and the acked offsets it carries.
const (
	FetchBatchesMax = 4096
	FetchAckedMax   = 1 << 20 // the acks of a lease window (core/lease DefaultAckWindowMax)
	// FetchBytesMax bounds what a fetch asks for: an answer stays under MessageBytesMax
	// with its ack state (8 bytes an offset) beside it.
	FetchBytesMax = 6 << 20
)

// FetchRequest asks the owner of partition Partition of incarnation Incarnation, under
// epoch Epoch, for its batches from offset From on, about BytesMax bytes of records (at
// least one batch when there is one).
type FetchRequest struct {
	ID          uint64
	Incarnation uint64
	Partition   uint32
	Epoch       uint32
	From        uint64
	BytesMax    uint32
}

// FetchBatch is one batch of the source's log.
type FetchBatch struct {
	Base     uint64
	CommitMs int64
	Records  []Record
}

// FetchResponse answers a FetchRequest. Code is CodeOK or why not (CodeRetry: not now;
// CodeIncarnation; CodeNotOwner: not the owner at that epoch; CodePartitionFailed). Next is
// where the next fetch starts: past Batches, and past a hole of the source. Frozen: the
// source takes no commit, so HighWatermark is final. HasAcks (only when Frozen and Next
// is HighWatermark): AckFloor and Acked are the partition's ack state.
type FetchResponse struct {
	ID            uint64
	Code          Code
	Oldest        uint64
	HighWatermark uint64
	Next          uint64
	Frozen        bool
	Batches       []FetchBatch
	HasAcks       bool
	AckFloor      uint64
	Acked         []uint64
}

func (FetchRequest) Kind() Kind  { return KindFetchRequest }
func (FetchResponse) Kind() Kind { return KindFetchResponse }

func (m FetchRequest) valid() bool { return m.Incarnation != 0 && m.BytesMax <= FetchBytesMax }

func (m FetchResponse) valid() bool {
	if m.Code == 0 || m.Code >= codeEnd || len(m.Batches) > FetchBatchesMax ||
		len(m.Acked) > FetchAckedMax || m.HasAcks && !m.Frozen || !m.HasAcks && len(m.Acked) > 0 ||
		m.Code != CodeOK && (len(m.Batches) > 0 || m.HasAcks) {
		return false
	}
	for _, bt := range m.Batches {
		if !validRecords(bt.Records) {
			return false
		}
	}
	return true
}

func (m FetchRequest) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = binary.LittleEndian.AppendUint64(b, m.Incarnation)
	b = binary.LittleEndian.AppendUint32(b, m.Partition)
	b = binary.LittleEndian.AppendUint32(b, m.Epoch)
	b = binary.LittleEndian.AppendUint64(b, m.From)
	return binary.LittleEndian.AppendUint32(b, m.BytesMax)
}

func (m FetchResponse) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = append(b, byte(m.Code))
	b = binary.LittleEndian.AppendUint64(b, m.Oldest)
	b = binary.LittleEndian.AppendUint64(b, m.HighWatermark)
	b = binary.LittleEndian.AppendUint64(b, m.Next)
	b = appendBool(b, m.Frozen)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Batches)))
	for _, bt := range m.Batches {
		b = binary.LittleEndian.AppendUint64(b, bt.Base)
		b = binary.LittleEndian.AppendUint64(b, uint64(bt.CommitMs))
		b = appendRecords(b, bt.Records)
	}
	b = appendBool(b, m.HasAcks)
	b = binary.LittleEndian.AppendUint64(b, m.AckFloor)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Acked)))
	for _, o := range m.Acked {
		b = binary.LittleEndian.AppendUint64(b, o)
	}
	return b
}

func (r *reader) fetchRequest() FetchRequest {
	return FetchRequest{ID: r.u64(), Incarnation: r.u64(), Partition: r.u32(), Epoch: r.u32(),
		From: r.u64(), BytesMax: r.u32()}
}

func (r *reader) fetchResponse() FetchResponse {
	m := FetchResponse{ID: r.u64(), Code: Code(r.u8()), Oldest: r.u64(), HighWatermark: r.u64(),
		Next: r.u64(), Frozen: r.boolean()}
	n := int(r.u16())
	if n > FetchBatchesMax || n*25 > len(r.b) { // a batch takes 25 bytes at least
		r.bad = true
		return m
	}
	for range n {
		bt := FetchBatch{Base: r.u64(), CommitMs: int64(r.u64())}
		bt.Records = r.records()
		if r.bad {
			return m
		}
		m.Batches = append(m.Batches, bt)
	}
	m.HasAcks, m.AckFloor = r.boolean(), r.u64()
	k := int(r.u32())
	if k > FetchAckedMax || k*8 > len(r.b) {
		r.bad = true
		return m
	}
	if k > 0 {
		m.Acked = make([]uint64, k)
		for i := range m.Acked {
			m.Acked[i] = r.u64()
		}
	}
	return m
}
