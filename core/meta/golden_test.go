package meta

import (
	"encoding/hex"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// The metastore's file bytes as written by the code before the shared framing
// (core/frame): a change of any of them is a format change, which takes a new format byte.
const (
	goldenLogFrame = "" +
		"fbcf01704a000000010102000000000000000100000000000000050000000000" +
		"000002000000050000000000000002000000000000000003000000636d640600" +
		"00000000000002000000000000000100000000"
	goldenSnapFile = "" +
		"18eebeb5b0010000017b22696e646578223a31302c227465726d223a322c2263" +
		"6f6e665f7374617465223a7b22766f74657273223a5b315d2c226c6561726e65" +
		"7273223a6e756c6c2c22766f746572735f6f7574676f696e67223a6e756c6c2c" +
		"226c6561726e6572735f6e657874223a6e756c6c2c226175746f5f6c65617665" +
		"223a66616c73657d2c227374617465223a7b22636f6d6d616e6473223a342c22" +
		"746f70696373223a5b7b226e616d65223a2261222c226964223a332c22706172" +
		"746974696f6e73223a332c22726574656e74696f6e5f6d73223a302c22766973" +
		"6962696c6974795f74696d656f75745f6d73223a312c226d61785f696e5f666c" +
		"696768745f7065725f706172746974696f6e223a312c22637265617465645f61" +
		"745f6d73223a357d2c7b226e616d65223a2262222c226964223a392c22706172" +
		"746974696f6e73223a313032342c22726574656e74696f6e5f6d73223a372c22" +
		"7669736962696c6974795f74696d656f75745f6d73223a34333230303030302c" +
		"226d61785f696e5f666c696768745f7065725f706172746974696f6e223a3635" +
		"3533362c22637265617465645f61745f6d73223a307d5d7d7d"
)

func TestFormatIsUnchanged(t *testing.T) {
	ents := []*raftpb.Entry{
		{Index: new(uint64(5)), Term: new(uint64(2)), Type: raftpb.EntryNormal.Enum(), Data: []byte("cmd")},
		{Index: new(uint64(6)), Term: new(uint64(2)), Type: raftpb.EntryConfChange.Enum()},
	}
	got := hex.EncodeToString(appendLogFrame(nil, hardState{Term: 2, Vote: 1, Commit: 5}, ents))
	if got != goldenLogFrame {
		t.Errorf("log frame\n got %s\nwant %s", got, goldenLogFrame)
	}
	b, _ := hex.DecodeString(goldenLogFrame)
	f, n, err := decodeLogFrame(b)
	if err != nil || n != len(b) || !f.HasHardState || f.HardState.Commit != 5 || len(f.Entries) != 2 ||
		string(f.Entries[0].Data) != "cmd" {
		t.Errorf("golden log frame decodes to %+v, %d, %v", f, n, err)
	}
	body := encodeSnapshotBody(sampleSnapshot())
	got = hex.EncodeToString(appendSnapFile(nil, body))
	if got != goldenSnapFile {
		t.Errorf("snap file\n got %s\nwant %s", got, goldenSnapFile)
	}
	b, _ = hex.DecodeString(goldenSnapFile)
	if sn, err := decodeSnapFile(b); err != nil || sn.Index != 10 || sn.Term != 2 || len(sn.m.byName) != 2 {
		t.Errorf("golden snap file decodes to %+v, %v", sn, err)
	}
}
