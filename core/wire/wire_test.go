package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func genMessage(t *rapid.T) Message {
	switch rapid.IntRange(0, 16).Draw(t, "kind") {
	case 16:
		return ConsumeCancel{ID: rapid.Uint64().Draw(t, "id")}
	case 14, 15:
		return genFetch(t)
	case 13:
		return Forgotten{Member: rapid.Uint64Min(1).Draw(t, "member"), Removed: rapid.Bool().Draw(t, "removed")}
	case 12:
		return Hello{From: rapid.Uint64Min(1).Draw(t, "from"), Nonce: rapid.Uint64().Draw(t, "nonce")}
	case 6, 7, 8, 9:
		return genRouted(t)
	case 10:
		return StatsRequest{ID: rapid.Uint64().Draw(t, "id"), Topic: rapid.StringMatching(`[a-z.]{1,20}`).Draw(t, "topic")}
	case 11:
		m := StatsResponse{ID: rapid.Uint64().Draw(t, "id"), Status: Status(rapid.IntRange(1, int(statusEnd)-1).Draw(t, "status"))}
		if rapid.Bool().Draw(t, "hasTopicID") {
			m.TopicID = rapid.Uint64Min(1).Draw(t, "topicID")
		}
		for range rapid.IntRange(0, 4).Draw(t, "n") {
			m.Partitions = append(m.Partitions, PartitionStat{Index: rapid.Uint32().Draw(t, "i"), HighWatermark: rapid.Uint64().Draw(t, "hw"),
				OldestOffset: rapid.Uint64().Draw(t, "old"), SizeBytes: rapid.Uint64().Draw(t, "size"), InFlight: rapid.Uint32().Draw(t, "inflight"), Failed: rapid.Bool().Draw(t, "failed")})
		}
		return m
	case 4:
		return ProposeRequest{ID: rapid.Uint64().Draw(t, "id"), Command: rapid.SliceOfN(rapid.Byte(), 1, 64).Draw(t, "cmd")}
	case 5:
		return ProposeResponse{ID: rapid.Uint64().Draw(t, "id"), Code: ProposeCode(rapid.IntRange(1, int(proposeCodeEnd)-1).Draw(t, "code")),
			Reason: rapid.StringMatching(`[a-z ]{0,30}`).Draw(t, "reason")}
	case 0:
		m := Raft{Data: rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "raft")}
		if rapid.Bool().Draw(t, "table") {
			m.Table = []MemberMarks{}
			for range rapid.IntRange(0, 3).Draw(t, "members") {
				m.Table = append(m.Table, MemberMarks{Member: rapid.Uint64Min(1).Draw(t, "member"), Marks: genMarks(t)})
			}
		}
		return m
	case 1:
		m := Heartbeat{From: rapid.Uint64Min(1).Draw(t, "from"), Addr: rapid.StringMatching(`[a-z0-9.:]{0,30}`).Draw(t, "addr")}
		if rapid.Bool().Draw(t, "marked") {
			m.Marks = genMarks(t)
		}
		return m
	case 2:
		recs := genRecords(t)
		return CommitRequest{
			ID: rapid.Uint64().Draw(t, "id"), Topic: rapid.StringMatching(`[a-z.]{1,20}`).Draw(t, "topic"),
			Incarnation: rapid.Uint64().Draw(t, "inc"), Partition: rapid.Uint32().Draw(t, "part"), Records: recs,
		}
	default:
		return CommitResponse{ID: rapid.Uint64().Draw(t, "id"), Code: Code(rapid.IntRange(1, int(codeEnd)-1).Draw(t, "code")),
			BaseOffset: rapid.Uint64().Draw(t, "base"), Count: rapid.Uint32().Draw(t, "count")}
	}
}

func genMarks(t *rapid.T) []Mark {
	ms := []Mark{}
	for range rapid.IntRange(0, 4).Draw(t, "marks") {
		old := rapid.Uint64Max(1<<50).Draw(t, "oldest")
		ms = append(ms, Mark{TopicID: rapid.Uint64Min(1).Draw(t, "topic"), Partition: rapid.Uint32().Draw(t, "part"),
			Epoch: rapid.Uint32().Draw(t, "epoch"), Oldest: old, HW: old + rapid.Uint64Max(1<<20).Draw(t, "n")})
	}
	return ms
}

func genRecords(t *rapid.T) []Record {
	recs := make([]Record, rapid.IntRange(1, 6).Draw(t, "records"))
	for i := range recs {
		recs[i].Payload = rapid.SliceOfN(rapid.Byte(), 1, 40).Draw(t, "payload")
		if rapid.Bool().Draw(t, "hasKey") {
			recs[i].HasKey, recs[i].Key = true, rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "key")
		}
	}
	return recs
}

func genFetch(t *rapid.T) Message {
	if rapid.Bool().Draw(t, "request") {
		return FetchRequest{ID: rapid.Uint64().Draw(t, "id"), Incarnation: rapid.Uint64Min(1).Draw(t, "inc"),
			Partition: rapid.Uint32().Draw(t, "part"), Epoch: rapid.Uint32().Draw(t, "epoch"),
			From: rapid.Uint64().Draw(t, "from"), BytesMax: rapid.Uint32Range(0, FetchBytesMax).Draw(t, "max")}
	}
	m := FetchResponse{ID: rapid.Uint64().Draw(t, "id"), Code: Code(rapid.IntRange(1, int(codeEnd)-1).Draw(t, "code")),
		Oldest: rapid.Uint64().Draw(t, "oldest"), HighWatermark: rapid.Uint64().Draw(t, "hw"),
		Next: rapid.Uint64().Draw(t, "next"), Frozen: rapid.Bool().Draw(t, "frozen")}
	if m.Code != CodeOK {
		return m
	}
	for range rapid.IntRange(0, 3).Draw(t, "batches") {
		m.Batches = append(m.Batches, FetchBatch{Base: rapid.Uint64().Draw(t, "base"),
			CommitMs: rapid.Int64().Draw(t, "ms"), Records: genRecords(t)})
	}
	if m.Frozen && rapid.Bool().Draw(t, "acks") {
		m.HasAcks, m.AckFloor = true, rapid.Uint64().Draw(t, "floor")
		m.Acked = rapid.SliceOfN(rapid.Uint64(), 0, 5).Draw(t, "acked")
	}
	return m
}

// normalize makes empty and nil byte slices compare equal.
func normalize(m Message) Message {
	if r, ok := m.(CommitRequest); ok {
		recs := make([]Record, len(r.Records))
		for i, rec := range r.Records {
			recs[i] = Record{HasKey: rec.HasKey, Key: append([]byte{}, rec.Key...), Payload: rec.Payload}
		}
		r.Records = recs
		return r
	}
	if r, ok := m.(Raft); ok {
		var table []MemberMarks
		for _, mm := range r.Table {
			table = append(table, MemberMarks{Member: mm.Member, Marks: append([]Mark{}, mm.Marks...)})
		}
		if r.Table != nil && table == nil {
			table = []MemberMarks{}
		}
		return Raft{Data: append([]byte{}, r.Data...), Table: table}
	}
	return normalizeRouted(m)
}

func normalizeRouted(m Message) Message {
	switch r := m.(type) {
	case FetchResponse:
		if len(r.Acked) == 0 {
			r.Acked = nil // an empty ack list decodes as nil (rapid seed 12701594092174871491)
		}
		return r
	case ConsumeResponse:
		msgs := []Delivered{}
		for _, d := range r.Messages {
			d.Key, d.Payload = append([]byte{}, d.Key...), append([]byte{}, d.Payload...)
			msgs = append(msgs, d)
		}
		r.Messages = msgs
		return r
	case AckResponse:
		r.Results = append([]uint8{}, r.Results...)
		return r
	case StatsResponse:
		r.Partitions = append([]PartitionStat{}, r.Partitions...)
		return r
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMessage(t)
		b, err := Encode([]byte("prefix"), m)
		if err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
		got, err := Decode(b[len("prefix"):])
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(m)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
		// Every truncation and every changed kind or version byte is refused or decodes
		// to something that re-encodes to exactly those bytes.
		body := b[len("prefix"):]
		for n := 0; n < len(body); n++ {
			checkCanonical(t, body[:n])
		}
	})
}

func checkCanonical(t interface{ Fatalf(string, ...any) }, b []byte) {
	m, err := Decode(b)
	if err != nil {
		return
	}
	again, err := Encode(nil, m)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("decoded %x to %+v, which encodes to %x (%v)", b, m, again, err)
	}
}

func TestBounds(t *testing.T) {
	ok := CommitRequest{ID: 1, Topic: "t", Incarnation: 2, Records: []Record{{Payload: []byte("x")}}}
	bad := []Message{
		CommitRequest{ID: 1, Topic: "", Records: ok.Records},
		CommitRequest{ID: 1, Topic: string(make([]byte, TopicBytesMax+1)), Records: ok.Records},
		CommitRequest{ID: 1, Topic: "t"},
		CommitRequest{ID: 1, Topic: "t", Records: []Record{{Payload: nil}}},
		CommitRequest{ID: 1, Topic: "t", Records: []Record{{Payload: make([]byte, PayloadBytesMax+1)}}},
		CommitRequest{ID: 1, Topic: "t", Records: []Record{{HasKey: true, Key: make([]byte, KeyBytesMax+1), Payload: []byte("x")}}},
		CommitRequest{ID: 1, Topic: "t", Records: []Record{{Key: []byte("k"), Payload: []byte("x")}}}, // key without HasKey
		CommitResponse{ID: 1},
		CommitResponse{ID: 1, Code: codeEnd},
		ConsumeRequest{ID: 1, Topic: "t", Partition: -1, Max: 0},
		ConsumeRequest{ID: 1, Topic: "t", Partition: -1, Max: ConsumeMessagesMax + 1},
		ConsumeRequest{ID: 1, Topic: "t", Partition: -1, Max: 1, HasOffset: true},
		ConsumeRequest{ID: 1, Topic: "t", Partition: -2, Max: 1},
		ConsumeRequest{ID: 1, Topic: "t", Partition: 0, Max: 1, WaitNs: -1},
		ConsumeResponse{ID: 1},
		ConsumeResponse{ID: 1, Status: StatusOK, Messages: make([]Delivered, ConsumeMessagesMax+1)},
		ConsumeResponse{ID: 1, Status: StatusOK, Messages: []Delivered{{Handle: string(make([]byte, HandleBytesMax+1))}}},
		AckRequest{ID: 1, Topic: "t"},
		AckRequest{ID: 1, Topic: "t", Mode: 3, Handles: []string{"h"}},
		AckRequest{ID: 1, Topic: "t", Handles: make([]string, ConsumeMessagesMax+1)},
		AckResponse{ID: 1, Status: StatusOK, Results: []uint8{AckBadHandle + 1}},
	}
	for _, m := range bad {
		if _, err := Encode(nil, m); !errors.Is(err, ErrInvalid) {
			t.Errorf("%.80v: %v, want ErrInvalid", m, err)
		}
	}
	big := CommitRequest{ID: 1, Topic: "t", Records: make([]Record, 17)}
	for i := range big.Records {
		big.Records[i].Payload = make([]byte, PayloadBytesMax)
	}
	if _, err := Encode(nil, big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 17 MiB commit: %v, want ErrTooLarge", err)
	}
	if _, err := Decode(make([]byte, MessageBytesMax+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("decoding 16 MiB + 1: %v", err)
	}
	b, _ := Encode(nil, ok)
	for _, mutate := range []func([]byte){
		func(b []byte) { b[0] = 2 },   // unknown version
		func(b []byte) { b[1] = 200 }, // unknown kind
	} {
		c := append([]byte{}, b...)
		mutate(c)
		if _, err := Decode(c); err == nil {
			t.Fatalf("%x accepted", c)
		}
	}
	if _, err := Decode(append(b, 0)); err == nil {
		t.Fatalf("trailing byte accepted")
	}
}

// A count that the remaining bytes cannot hold is refused without allocating for it.
func TestHugeCountRefusedCheaply(t *testing.T) {
	b, _ := Encode(nil, CommitRequest{ID: 1, Topic: "t", Records: []Record{{Payload: []byte("x")}}})
	countAt := 2 + 8 + 8 + 4 + 2 + 1
	c := append([]byte{}, b...)
	c[countAt], c[countAt+1], c[countAt+2], c[countAt+3] = 0, 0, 1, 0 // 65,536 records
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := Decode(c); err == nil {
			t.Fatalf("65,536 records in %d bytes accepted", len(c))
		}
	})
	if allocs > 2 {
		t.Fatalf("%v allocations refusing a huge count", allocs)
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range []Message{
		Raft{Data: []byte{8, 1, 16, 2}}, Heartbeat{From: 3, Addr: "127.0.0.1:7943"},
		Heartbeat{From: 3, Addr: "127.0.0.1:7943", Marks: []Mark{{TopicID: 4, Partition: 1, Epoch: 2, Oldest: 1 << 41, HW: 1<<41 + 9}}},
		Raft{Data: []byte{8, 1, 16, 2}, Table: []MemberMarks{{Member: 2, Marks: []Mark{{TopicID: 4, HW: 3}}}, {Member: 3, Marks: []Mark{}}}},
		CommitRequest{ID: 9, Topic: "orders", Incarnation: 4, Partition: 2, Records: []Record{
			{Payload: []byte("a")}, {HasKey: true, Key: []byte("k"), Payload: []byte("bc")}, {HasKey: true, Payload: []byte("d")}}},
		CommitResponse{ID: 9, Code: CodeOK, BaseOffset: 100, Count: 3},
		ProposeRequest{ID: 5, Command: []byte(`\x01{"kind":"create_topic","name":"t"}`)},
		ProposeResponse{ID: 5, Code: ProposeInvalid, Reason: "partitions must be 1 to 256"},
		ConsumeRequest{ID: 7, Topic: "orders", Partition: -1, Max: 10, WaitNs: 1e9},
		ConsumeRequest{ID: 8, Topic: "orders", Partition: 2, Max: 1, HasOffset: true, Offset: 41},
		ConsumeResponse{ID: 7, Status: StatusOK, Messages: []Delivered{
			{Partition: 1, Offset: 3, TimestampMs: 1700000000000, HasKey: true, Key: []byte("k"), Payload: []byte("v"), Handle: "AAAA"},
			{Partition: 2, Offset: 4, Payload: []byte("w")}}},
		ConsumeResponse{ID: 7, Status: StatusOK, TopicID: 12, Messages: []Delivered{{Partition: 1, Offset: 3, Payload: []byte("v"), Handle: "AAAA"}}},
		AckRequest{ID: 9, Topic: "orders", Mode: 2, Handles: []string{"AAAA", "BBBB"}},
		AckResponse{ID: 9, Status: StatusOK, Results: []uint8{AckOK, AckGone}},
		FetchRequest{ID: 11, Incarnation: 4, Partition: 2, Epoch: 1, From: 1 << 40, BytesMax: 1 << 20},
		FetchResponse{ID: 11, Code: CodeOK, Oldest: 3, HighWatermark: 9, Next: 9, Frozen: true,
			Batches: []FetchBatch{{Base: 5, CommitMs: 1700000000000, Records: []Record{{Payload: []byte("a")},
				{HasKey: true, Key: []byte("k"), Payload: []byte("b")}}}}, HasAcks: true, AckFloor: 4, Acked: []uint64{6, 8}},
		FetchResponse{ID: 12, Code: CodeNotOwner},
		StatsRequest{ID: 10, Topic: "orders"}, Hello{From: 2, Nonce: 77}, Forgotten{Member: 3}, Forgotten{Member: 4, Removed: true}, ConsumeCancel{ID: 7},
		StatsResponse{ID: 10, Status: StatusOK, Partitions: []PartitionStat{{Index: 2, HighWatermark: 7, SizeBytes: 900, InFlight: 1}}},
		StatsResponse{ID: 10, Status: StatusOK, TopicID: 12, Partitions: []PartitionStat{{Index: 2, HighWatermark: 7}}},
		StatsResponse{ID: 10, Status: StatusOK, TopicID: 12, Partitions: []PartitionStat{{Index: 1}, {Index: 2, Failed: true}}},
	} {
		b, err := Encode(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCanonical(t, b)
	})
}

func genRouted(t *rapid.T) Message {
	id := rapid.Uint64().Draw(t, "id")
	topic := rapid.StringMatching(`[a-z.]{1,20}`).Draw(t, "topic")
	status := Status(rapid.IntRange(1, int(statusEnd)-1).Draw(t, "status"))
	switch rapid.IntRange(0, 3).Draw(t, "routed") {
	case 0:
		m := ConsumeRequest{ID: id, Topic: topic, Partition: rapid.Int64Range(-1, 1<<32-1).Draw(t, "part"),
			Max: uint16(rapid.IntRange(1, ConsumeMessagesMax).Draw(t, "max")), WaitNs: rapid.Int64Min(0).Draw(t, "wait")}
		if m.Partition >= 0 && rapid.Bool().Draw(t, "replay") {
			m.HasOffset, m.Offset = true, rapid.Uint64().Draw(t, "offset")
		}
		m.Actor = rapid.StringMatching(`([a-z.]{1,64})?`).Draw(t, "actor")
		return m
	case 1:
		m := ConsumeResponse{ID: id, Status: status, Reason: rapid.StringMatching(`[a-z ]{0,20}`).Draw(t, "reason")}
		if rapid.Bool().Draw(t, "hasTopicID") {
			m.TopicID = rapid.Uint64Min(1).Draw(t, "topicID")
		}
		for range rapid.IntRange(0, 4).Draw(t, "n") {
			d := Delivered{Partition: rapid.Uint32().Draw(t, "p"), Offset: rapid.Uint64().Draw(t, "o"), TimestampMs: rapid.Int64().Draw(t, "ts"),
				Payload: rapid.SliceOfN(rapid.Byte(), 0, 30).Draw(t, "payload"), Handle: rapid.StringMatching(`[A-Za-z0-9_-]{0,40}`).Draw(t, "h")}
			if rapid.Bool().Draw(t, "hasKey") {
				d.HasKey, d.Key = true, rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "key")
			}
			m.Messages = append(m.Messages, d)
		}
		return m
	case 2:
		return AckRequest{ID: id, Topic: topic, Mode: uint8(rapid.IntRange(0, 2).Draw(t, "mode")),
			Handles: rapid.SliceOfN(rapid.StringMatching(`[A-Za-z0-9_-]{0,40}`), 1, 5).Draw(t, "handles"),
			Actor:   rapid.StringMatching(`([a-z.]{1,64})?`).Draw(t, "actor")}
	default:
		return AckResponse{ID: id, Status: status, Results: rapid.SliceOfN(rapid.Uint8Range(0, AckBadHandle), 0, 5).Draw(t, "results")}
	}
}

// A kind 14 frame always names an incarnation: one naming 0 is refused (it would be kind
// 8), so every decoded response re-encodes to its own bytes.
func TestConsumeResponseTopicIDZeroRefused(t *testing.T) {
	b, err := Encode(nil, ConsumeResponse{ID: 1, Status: StatusOK, TopicID: 5})
	if err != nil || Kind(b[1]) != KindConsumeResponseTopic {
		t.Fatalf("encode: kind %d, %v", b[1], err)
	}
	for i := 2; i < 10; i++ {
		b[i] = 0
	}
	if _, err := Decode(b); err == nil {
		t.Fatalf("kind 14 naming incarnation 0 accepted")
	}
	old, _ := Encode(nil, ConsumeResponse{ID: 1, Status: StatusOK})
	if m, err := Decode(old); err != nil || Kind(old[1]) != KindConsumeResponse || m.(ConsumeResponse).TopicID != 0 {
		t.Fatalf("kind 8: %+v, %v", m, err)
	}
}

// A kind 15 frame always names an incarnation, like kind 14: one naming 0 is refused,
// and a response without one is still kind 12.
func TestStatsResponseTopicIDZeroRefused(t *testing.T) {
	b, err := Encode(nil, StatsResponse{ID: 1, Status: StatusOK, TopicID: 5})
	if err != nil || Kind(b[1]) != KindStatsResponseTopic {
		t.Fatalf("encode: kind %d, %v", b[1], err)
	}
	for i := 2; i < 10; i++ {
		b[i] = 0
	}
	if _, err := Decode(b); err == nil {
		t.Fatalf("kind 15 naming incarnation 0 accepted")
	}
	old, _ := Encode(nil, StatsResponse{ID: 1, Status: StatusOK})
	if m, err := Decode(old); err != nil || Kind(old[1]) != KindStatsResponse || m.(StatsResponse).TopicID != 0 {
		t.Fatalf("kind 12: %+v, %v", m, err)
	}
}

// Kinds 16 and 17 always name a user: one naming "" is refused (it would be kind 7 or 9),
// and a request without a user is still kind 7 or 9.
func TestRequestsAsNameTheirUser(t *testing.T) {
	for _, m := range []Message{ConsumeRequest{Actor: "app", ID: 1, Topic: "t", Partition: -1, Max: 1},
		AckRequest{Actor: "app", ID: 1, Topic: "t", Handles: []string{"h"}}} {
		b, err := Encode(nil, m)
		if err != nil || (Kind(b[1]) != KindConsumeRequestAs && Kind(b[1]) != KindAckRequestAs) {
			t.Fatalf("encode %T: kind %d, %v", m, b[1], err)
		}
		if got, err := Decode(b); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("decode: %+v, %v", got, err)
		}
		empty := append(append([]byte{}, b[:2]...), 0, 0) // actor_len 0
		empty = append(empty, b[2+2+3:]...)               // the rest after "app"
		if _, err := Decode(empty); err == nil {
			t.Fatalf("%T naming no user accepted as kind %d", m, b[1])
		}
	}
	b, _ := Encode(nil, ConsumeRequest{ID: 1, Topic: "t", Partition: -1, Max: 1})
	if Kind(b[1]) != KindConsumeRequest {
		t.Fatalf("a request without a user is kind %d", b[1])
	}
}
