package meta

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/frame"

	"go.etcd.io/raft/v3/raftpb"
)

func sampleEntries() []*raftpb.Entry {
	return []*raftpb.Entry{
		{Index: new(uint64(7)), Term: new(uint64(2)), Type: raftpb.EntryConfChange.Enum(), Data: []byte{8, 0, 16, 1}},
		{Index: new(uint64(8)), Term: new(uint64(3)), Type: raftpb.EntryNormal.Enum()},
		{Index: new(uint64(9)), Term: new(uint64(3)), Type: raftpb.EntryNormal.Enum(), Data: []byte(`{"x":1}`)},
	}
}

func sameEntries(a, b []*raftpb.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].GetIndex() != b[i].GetIndex() || a[i].GetTerm() != b[i].GetTerm() ||
			a[i].GetType() != b[i].GetType() || !bytes.Equal(a[i].GetData(), b[i].GetData()) {
			return false
		}
	}
	return true
}

func TestLogFrameRoundTrip(t *testing.T) {
	for _, c := range []struct {
		hs   hardState
		ents []*raftpb.Entry
	}{
		{hardState{Term: 3, Vote: 1, Commit: 8}, sampleEntries()},
		{hardState{}, sampleEntries()},
		{hardState{Term: 1, Commit: 1}, nil},
	} {
		b := appendLogFrame([]byte("prefix"), c.hs, c.ents)
		f, n, err := decodeLogFrame(b[6:])
		if err != nil || n != len(b)-6 || n != logFrameBytes(c.ents) {
			t.Fatalf("decode: n=%d err=%v", n, err)
		}
		if f.HasHardState != !c.hs.isEmpty() || f.HardState != c.hs || !sameEntries(f.Entries, c.ents) {
			t.Fatalf("round trip changed the frame: %+v", f)
		}
	}
}

func TestLogFrameDetectsDamage(t *testing.T) {
	good := appendLogFrame(nil, hardState{Term: 3, Vote: 1, Commit: 8}, sampleEntries())
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		if _, _, err := decodeLogFrame(b); err == nil {
			t.Fatalf("bit flip at byte %d not detected", i)
		}
	}
	if _, _, err := decodeLogFrame(good[:len(good)-1]); !errors.Is(err, frame.ErrShort) {
		t.Fatalf("short frame: %v", err)
	}
	if _, _, err := decodeLogFrame(make([]byte, 64)); err == nil {
		t.Fatal("zeros decode as a frame")
	}
	if !findValidFrame(append(make([]byte, 5), good...), 1) || findValidFrame(good, 1) {
		t.Fatal("findValidFrame")
	}
}

func TestRewriteFramesSplit(t *testing.T) {
	var ents []*raftpb.Entry
	big := bytes.Repeat([]byte{'x'}, EntryBytesMax)
	for i := uint64(1); i <= 7; i++ {
		ents = append(ents, &raftpb.Entry{Index: new(i), Term: new(uint64(1)), Type: raftpb.EntryNormal.Enum(), Data: big})
	}
	hs := hardState{Term: 1, Vote: 1, Commit: 7}
	b := appendRewriteFrames(nil, hs, ents)
	var got []*raftpb.Entry
	frames := 0
	for p := 0; p < len(b); frames++ {
		f, n, err := decodeLogFrame(b[p:])
		if err != nil {
			t.Fatal(err)
		}
		last := p+n == len(b)
		if f.HasHardState != last || last && f.HardState != hs {
			t.Fatalf("frame %d: hard state %v %+v", frames, f.HasHardState, f.HardState)
		}
		got = append(got, f.Entries...)
		p += n
	}
	if frames < 3 || !sameEntries(got, ents) {
		t.Fatalf("%d frames, %d entries", frames, len(got))
	}
}

func sampleSnapshot() snapshot {
	m := newMachine()
	m.add(Topic{Name: "a", ID: 3, Partitions: 3, RetentionMs: 0, VisibilityTimeoutMs: 1, MaxInFlightPerPartition: 1, CreatedAtMs: 5})
	m.add(Topic{Name: "b", ID: 9, Partitions: 1024, RetentionMs: 7, VisibilityTimeoutMs: 43_200_000, MaxInFlightPerPartition: 65_536})
	m.commands = 4
	return snapshot{Index: 10, Term: 2, Data: encodeState(m), m: m,
		Conf: &raftpb.ConfState{Voters: []uint64{1}, AutoLeave: new(false)}}
}

func TestSnapFileRoundTrip(t *testing.T) {
	want := sampleSnapshot()
	b := appendSnapFile(nil, encodeSnapshotBody(want))
	got, err := decodeSnapFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Index != want.Index || got.Term != want.Term || !bytes.Equal(got.Data, want.Data) ||
		got.m.commands != 4 || len(got.m.byName) != 2 || got.m.byName["b"] != want.m.byName["b"] ||
		got.m.byID[3] != "a" || len(got.Conf.GetVoters()) != 1 {
		t.Fatalf("round trip: %+v", got)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x01
		if _, err := decodeSnapFile(c); err == nil {
			t.Fatalf("bit flip at byte %d not detected", i)
		}
	}
	if _, err := decodeSnapFile(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

func TestSnapshotContentChecked(t *testing.T) {
	for name, body := range map[string]string{
		"unsorted":       `{"index":10,"term":1,"conf_state":{"voters":[1]},"state":{"commands":1,"topics":[{"name":"b","id":2,"partitions":1,"retention_ms":0,"visibility_timeout_ms":1,"max_in_flight_per_partition":1},{"name":"a","id":3,"partitions":1,"retention_ms":0,"visibility_timeout_ms":1,"max_in_flight_per_partition":1}]}}`,
		"id past index":  `{"index":10,"term":1,"conf_state":{"voters":[1]},"state":{"commands":1,"topics":[{"name":"a","id":11,"partitions":1,"retention_ms":0,"visibility_timeout_ms":1,"max_in_flight_per_partition":1}]}}`,
		"duplicate id":   `{"index":10,"term":1,"conf_state":{"voters":[1]},"state":{"commands":1,"topics":[{"name":"a","id":3,"partitions":1,"retention_ms":0,"visibility_timeout_ms":1,"max_in_flight_per_partition":1},{"name":"b","id":3,"partitions":1,"retention_ms":0,"visibility_timeout_ms":1,"max_in_flight_per_partition":1}]}}`,
		"bad partitions": `{"index":10,"term":1,"conf_state":{"voters":[1]},"state":{"commands":1,"topics":[{"name":"a","id":3,"partitions":0,"retention_ms":0,"visibility_timeout_ms":1,"max_in_flight_per_partition":1}]}}`,
		"no voters":      `{"index":10,"term":1,"conf_state":{"voters":[]},"state":{"commands":0,"topics":[]}}`,
		"unknown field":  `{"index":10,"term":1,"conf_state":{"voters":[1]},"state":{"commands":0,"topics":[]},"extra":1}`,
		"zero index":     `{"index":0,"term":1,"conf_state":{"voters":[1]},"state":{"commands":0,"topics":[]}}`,
	} {
		if _, err := decodeSnapFile(appendSnapFile(nil, []byte(body))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCommandRoundTrip(t *testing.T) {
	c, err := Command{Kind: CreateTopic, Name: "orders", RetentionMs: new(int64(0))}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	p := proposalEntry{Node: 1, Seq: 42, NowNs: 1_700_000_000_123_456_789, Cmd: c}
	got, err := decodeCommand(encodeCommand(p))
	if err != nil || got.Node != 1 || got.Seq != 42 || got.NowNs != p.NowNs || got.Cmd.Kind != CreateTopic ||
		got.Cmd.Name != "orders" || *got.Cmd.RetentionMs != 0 || *got.Cmd.Partitions != DefaultPartitions {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {1}, {2, '{', '}'}, []byte("\x01{\"kind\":\"drop\",\"name\":\"x\"}"),
		[]byte("\x01{\"kind\":\"delete\",\"name\":\"x\",\"more\":1}"), []byte("\x01{\"kind\":\"delete\",\"name\":\"x\"} {}"),
		[]byte("\x01{\"kind\":\"delete\",\"name\":\"x\",\"fwd\":{\"origin\":2,\"nonce\":0,\"seq\":1,\"applied\":0}}"),
		[]byte("\x01{\"kind\":\"delete\",\"name\":\"x\",\"fwd\":{\"origin\":2,\"nonce\":1,\"seq\":1,\"applied\":0,\"x\":1}}")} {
		if _, err := decodeCommand(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// FuzzDecodeLogFrame: the decoder never panics, never reads past its input, and whatever it
// accepts re-encodes to exactly the bytes it read.
func FuzzDecodeLogFrame(f *testing.F) {
	f.Add(appendLogFrame(nil, hardState{Term: 3, Vote: 1, Commit: 8}, sampleEntries()))
	f.Add(appendLogFrame(nil, hardState{}, nil))
	f.Add(make([]byte, 40))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, n, err := decodeLogFrame(b)
		if findValidFrame(b, 0) != (err == nil) && err == nil {
			t.Fatal("findValidFrame misses a frame at 0")
		}
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("frame of %d bytes from %d bytes of input", n, len(b))
		}
		hs := got.HardState
		if !got.HasHardState {
			hs = hardState{}
		}
		if re := appendLogFrame(nil, hs, got.Entries); !bytes.Equal(re, b[:n]) {
			t.Fatalf("re-encoding differs:\n%x\n%x", re, b[:n])
		}
	})
}

// FuzzDecodeSnapFile: the decoder never panics, and whatever it accepts is a valid state
// that encodes back to a file decoding to the same snapshot.
func FuzzDecodeSnapFile(f *testing.F) {
	s := sampleSnapshot()
	f.Add(appendSnapFile(nil, encodeSnapshotBody(s)))
	f.Add(appendSnapFile(nil, []byte(`{"index":1,"term":1,"conf_state":{"voters":[1]},"state":{"commands":0,"topics":[]}}`)))
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 1, '{'})
	f.Add(appendSnapFile(nil, []byte(`{"index":9,"term":1,"conf_state":{"voters":[1]},"state":{"commands":2,"topics":[],`+
		`"forwards":[{"origin":2,"nonce":7,"commit":3,"floor":1,"seqs":[{"seq":4,"failed":true},{"seq":6}]}]}}`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeSnapFile(b)
		if err != nil {
			return
		}
		for name, topic := range got.m.byName { //narad:unordered
			if !ValidName(name) || got.m.byID[topic.ID] != name || topic.ID > got.Index {
				t.Fatalf("accepted an invalid topic %+v", topic)
			}
		}
		got.Data = encodeState(got.m)
		again, err := decodeSnapFile(appendSnapFile(nil, encodeSnapshotBody(got)))
		if err != nil || again.Index != got.Index || again.Term != got.Term || !bytes.Equal(again.Data, got.Data) {
			t.Fatalf("re-encoding does not decode the same: %v", err)
		}
	})
}

// FuzzDecodeCommand: the decoder never panics; what it accepts re-encodes to an entry that
// decodes the same.
func FuzzDecodeCommand(f *testing.F) {
	c, _ := Command{Kind: PatchTopic, Name: "t", Partitions: new(uint32(4))}.normalize()
	f.Add(encodeCommand(proposalEntry{Node: 1, Seq: 1, NowNs: 5, Cmd: c}))
	f.Add([]byte("\x01{}"))
	u, _ := Command{Kind: CreateUser, Username: "u", Actor: "admin", Hash: "$2a$10$" + strings.Repeat("x", 53),
		Grants: []access.Grant{{Action: access.Produce, Patterns: []string{"a*"}}}}.normalize()
	f.Add(encodeCommand(proposalEntry{Node: 1, Seq: 2, NowNs: 5, Cmd: u}))
	f.Add(encodeCommand(proposalEntry{Node: 1, Seq: 3, NowNs: 5, Cmd: c, Fwd: ProposalID{Origin: 2, Nonce: 7, Seq: 9, Commit: 4}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeCommand(b)
		if err != nil {
			return
		}
		q, err := decodeCommand(encodeCommand(p))
		if err != nil || q.Node != p.Node || q.Seq != p.Seq || q.NowNs != p.NowNs || q.Fwd != p.Fwd || q.Refused != p.Refused || q.Cmd.Kind != p.Cmd.Kind || q.Cmd.Name != p.Cmd.Name ||
			q.Cmd.Username != p.Cmd.Username || q.Cmd.Hash != p.Cmd.Hash || fmt.Sprint(q.Cmd.Grants) != fmt.Sprint(p.Cmd.Grants) {
			t.Fatalf("re-encoding: %+v vs %+v (%v)", p, q, err)
		}
		_, _ = newMachine().applyProposal(p, 1) // the apply validates: never panics
	})
}
