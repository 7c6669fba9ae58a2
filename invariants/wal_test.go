package invariants

import (
	"strings"
	"testing"

	"github.com/narad/narad/core/wal"
)

func segmentWith(payloads ...string) []byte {
	var b []byte
	for i, p := range payloads {
		r := wal.Record{Seq: uint64(i + 1), Topic: "t", Payload: []byte(p)}
		b = wal.AppendFrame(b, &r)
	}
	return b
}

func TestWALNeverZeroCopies(t *testing.T) {
	seg := segmentWith("a", "b", "c")
	files := map[string][]byte{"wal/0000000000000001.seg": seg}
	img := ReadWALImage(files, "wal")
	if err := WALNeverZeroCopies(img, map[uint64][]byte{1: []byte("a"), 3: []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if err := WALNeverZeroCopies(img, map[uint64][]byte{4: []byte("d")}); err == nil || !strings.Contains(err.Error(), "no durable copy") {
		t.Fatalf("missing record: %v", err)
	}
	if err := WALNeverZeroCopies(img, map[uint64][]byte{2: []byte("B")}); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("changed record: %v", err)
	}
	// A damaged frame is not a copy.
	damaged := append([]byte(nil), seg...)
	damaged[len(damaged)-1] ^= 1
	img = ReadWALImage(map[string][]byte{"wal/0000000000000001.seg": damaged}, "wal")
	if err := WALNeverZeroCopies(img, map[uint64][]byte{3: []byte("c")}); err == nil {
		t.Fatalf("a record whose frame fails its CRC counted as a copy")
	}
}

func TestCheckpointExemptsAndBounds(t *testing.T) {
	ckpt := map[string][]byte{"wal/checkpoint": checkpointBytes(t, 3)}
	img := ReadWALImage(ckpt, "wal")
	if !img.HasCheckpoint || img.Checkpoint != 3 {
		t.Fatalf("checkpoint %+v", img)
	}
	if err := WALNeverZeroCopies(img, map[uint64][]byte{1: []byte("gone"), 2: []byte("gone")}); err != nil {
		t.Fatalf("records below the durable checkpoint are exempt: %v", err)
	}
	if err := CheckpointNeverPassesWork(img, 2); err == nil {
		t.Fatalf("checkpoint 3 with work dispatched only below 2 must be a violation")
	}
	if err := CheckpointNeverPassesWork(img, 3); err != nil {
		t.Fatal(err)
	}
}

func checkpointBytes(t *testing.T, seq uint64) []byte {
	t.Helper()
	return wal.EncodeCheckpointFile(seq)
}
