package wire

import "encoding/binary"

// Partition marks (core/node marks.go): what a member last said of the partitions it
// owns, so that a forget of it answers the records it gives up (the high watermark and
// oldest offset at last contact). A member's heartbeat to the metastore leader carries
// its marks (kind 21); the leader passes the table of every member's marks on to its
// followers with its raft messages (kind 22), so that any member can answer a forget,
// even of a leader that died.

// Bounds of the marks.
const (
	// HeartbeatMarksMax bounds the marks of one heartbeat; a member that owns more sends
	// them in turns.
	HeartbeatMarksMax = 4096
	// TableMarksMax bounds the marks of one table (all members together).
	TableMarksMax = 65_536
	// TableMembersMax bounds the members of one table.
	TableMembersMax = 1024
	markBytes       = 32
)

// Mark is one partition's state at its owner: its topic incarnation, index, epoch, oldest
// offset and high watermark.
type Mark struct {
	TopicID   uint64
	Partition uint32
	Epoch     uint32
	Oldest    uint64
	HW        uint64
}

// MemberMarks are the marks member Member last reported.
type MemberMarks struct {
	Member uint64
	Marks  []Mark
}

// KindHeartbeatMarks is a Heartbeat with its sender's marks; kind 2 is one without.
// KindRaftMarks is a Raft message with the leader's table of marks.
const (
	KindHeartbeatMarks Kind = KindFetchResponse + 1 + iota
	KindRaftMarks
	// KindConsumeCancel ends a routed consume its asker no longer needs (ConsumeCancel).
	KindConsumeCancel
)

// Kind is KindHeartbeatMarks when m carries marks.
func (m Heartbeat) Kind() Kind {
	if m.Marks != nil {
		return KindHeartbeatMarks
	}
	return KindHeartbeat
}

// Kind is KindRaftMarks when m carries a table.
func (m Raft) Kind() Kind {
	if m.Table != nil {
		return KindRaftMarks
	}
	return KindRaft
}

func (m Raft) appendBody(b []byte) []byte {
	if m.Table == nil {
		return append(b, m.Data...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Data)))
	b = append(b, m.Data...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Table)))
	for _, mm := range m.Table {
		b = binary.LittleEndian.AppendUint64(b, mm.Member)
		b = appendMarks(b, mm.Marks)
	}
	return b
}

func (m Heartbeat) appendBody(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.From)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Addr)))
	b = append(b, m.Addr...)
	if m.Marks == nil {
		return b
	}
	return appendMarks(b, m.Marks)
}

func appendMarks(b []byte, ms []Mark) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ms)))
	for _, k := range ms {
		b = binary.LittleEndian.AppendUint64(b, k.TopicID)
		b = binary.LittleEndian.AppendUint32(b, k.Partition)
		b = binary.LittleEndian.AppendUint32(b, k.Epoch)
		b = binary.LittleEndian.AppendUint64(b, k.Oldest)
		b = binary.LittleEndian.AppendUint64(b, k.HW)
	}
	return b
}

// validMarks: within max, each naming a topic incarnation, oldest at most the high
// watermark.
func validMarks(ms []Mark, max int) bool {
	if len(ms) > max {
		return false
	}
	for _, k := range ms {
		if k.TopicID == 0 || k.Oldest > k.HW {
			return false
		}
	}
	return true
}

func validTable(t []MemberMarks) bool {
	if len(t) > TableMembersMax {
		return false
	}
	total := 0
	for _, mm := range t {
		total += len(mm.Marks)
		if mm.Member == 0 || !validMarks(mm.Marks, TableMarksMax) {
			return false
		}
	}
	return total <= TableMarksMax
}

func (r *reader) heartbeat(marked bool) Heartbeat {
	hb := Heartbeat{From: r.u64()}
	hb.Addr = string(r.bytes(int(r.u16())))
	if marked {
		hb.Marks = r.marks(HeartbeatMarksMax)
	}
	return hb
}

func (r *reader) raftMarks() Raft {
	m := Raft{Data: r.bytes(int(r.u32()))}
	n := int(r.u16())
	if n > TableMembersMax || n*12 > len(r.b) {
		r.bad = true
		return m
	}
	m.Table = make([]MemberMarks, n)
	for i := range m.Table {
		m.Table[i] = MemberMarks{Member: r.u64(), Marks: r.marks(TableMarksMax)}
	}
	return m
}

// marks reads count u32 and that many marks, never more than max or than the bytes hold.
func (r *reader) marks(max int) []Mark {
	n := r.u32()
	if r.bad || uint64(n) > uint64(max) || uint64(n)*markBytes > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	ms := make([]Mark, n)
	for i := range ms {
		ms[i] = Mark{TopicID: r.u64(), Partition: r.u32(), Epoch: r.u32(), Oldest: r.u64(),
			HW: r.u64()}
	}
	return ms
}
