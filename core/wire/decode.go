package wire

import "encoding/binary"

// Decode reads one message. It never panics and allocates nothing past the bounds; the
// byte slices of the result alias b.
func Decode(b []byte) (Message, error) {
	if len(b) > MessageBytesMax {
		return nil, ErrTooLarge
	}
	if len(b) < 2 || b[0] != Version {
		return nil, ErrInvalid
	}
	r := &reader{b: b[2:]}
	var m Message
	switch Kind(b[1]) {
	case KindRaft:
		m = Raft{Data: r.rest()}
	case KindHeartbeat, KindHeartbeatMarks:
		m = r.heartbeat(Kind(b[1]) == KindHeartbeatMarks)
	case KindRaftMarks:
		m = r.raftMarks()
	case KindCommitRequest:
		m = r.commitRequest()
	case KindCommitResponse:
		m = CommitResponse{ID: r.u64(), Code: Code(r.u8()), BaseOffset: r.u64(), Count: r.u32()}
	case KindProposeRequest:
		pr := ProposeRequest{ID: r.u64()}
		pr.Command = r.bytes(int(r.u16()))
		m = pr
	case KindConsumeRequest:
		m = r.consumeRequest()
	case KindConsumeResponse:
		m = r.consumeResponse()
	case KindConsumeResponseTopic:
		m = r.consumeResponseTopic()
	case KindAckRequest:
		m = r.ackRequest()
	case KindConsumeRequestAs:
		a := r.actor()
		cr := r.consumeRequest()
		cr.Actor = a
		m = cr
	case KindAckRequestAs:
		a := r.actor()
		ar := r.ackRequest()
		ar.Actor = a
		m = ar
	case KindAckResponse:
		m = r.ackResponse()
	case KindStatsRequest:
		m = StatsRequest{ID: r.u64(), Topic: r.string16()}
	case KindStatsResponse:
		m = r.statsResponse()
	case KindStatsResponseTopic:
		m = r.statsResponseTopic()
	case KindHello:
		m = Hello{From: r.u64(), Nonce: r.u64()}
	case KindConsumeCancel:
		m = ConsumeCancel{ID: r.u64()}
	case KindForgotten:
		m = Forgotten{Member: r.u64(), Removed: r.boolean()}
	case KindFetchRequest:
		m = r.fetchRequest()
	case KindFetchResponse:
		m = r.fetchResponse()
	case KindProposeResponse:
		pr := ProposeResponse{ID: r.u64(), Code: ProposeCode(r.u8())}
		pr.Reason = string(r.bytes(int(r.u16())))
		m = pr
	default:
		return nil, ErrInvalid
	}
	if r.bad || len(r.b) != 0 || validate(m) != nil {
		return nil, ErrInvalid
	}
	return m, nil
}

func (r *reader) commitRequest() CommitRequest {
	m := CommitRequest{ID: r.u64(), Incarnation: r.u64(), Partition: r.u32()}
	m.Topic = string(r.bytes(int(r.u16())))
	m.Records = r.records()
	return m
}

// records reads count u32 and 1 to CommitRecordsMax records.
func (r *reader) records() []Record {
	n := r.u32()
	if r.bad || n == 0 || n > CommitRecordsMax {
		r.bad = true
		return nil
	}
	// Each record takes at least 9 bytes (two lengths and a payload byte): a count the
	// bytes cannot hold is refused before the slice is made.
	if uint64(n)*9 > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	recs := make([]Record, n)
	for i := range recs {
		kl, pl := r.u32(), r.u32()
		rec := &recs[i]
		if kl != noKey {
			if kl > KeyBytesMax {
				r.bad = true
				return nil
			}
			rec.HasKey, rec.Key = true, r.bytes(int(kl))
		}
		if pl == 0 || pl > PayloadBytesMax {
			r.bad = true
			return nil
		}
		rec.Payload = r.bytes(int(pl))
		if r.bad {
			return nil
		}
	}
	return recs
}

// reader consumes little-endian fields; a short read sets bad and yields zeros.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *reader) bytes(n int) []byte { return r.take(n) }

func (r *reader) rest() []byte { return r.take(len(r.b)) }
