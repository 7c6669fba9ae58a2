package invariants

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/narad/narad/core/wal"
)

// WALImage is what a crash right now would leave of one node's ingress WAL: the durable
// checkpoint and every CRC-valid record in the durable segment images.
type WALImage struct {
	Checkpoint    uint64 // 0 when no checkpoint slot is durable
	HasCheckpoint bool
	Records       map[uint64][]byte // seq -> payload
}

// ReadWALImage decodes the durable files of one node (name -> durable bytes) for the WAL
// in directory dir. Damaged frames are skipped, as recovery skips them.
func ReadWALImage(files map[string][]byte, dir string) WALImage {
	img := WALImage{Records: map[uint64][]byte{}}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, dir+"/")
		if !ok || strings.Contains(rest, "/") {
			continue
		}
		b := files[name]
		if rest == wal.CheckpointFile {
			img.Checkpoint, img.HasCheckpoint = wal.DecodeCheckpoint(b)
			continue
		}
		if strings.HasSuffix(rest, ".seg") {
			decodeSegmentImage(b, img.Records)
		}
	}
	return img
}

func decodeSegmentImage(b []byte, into map[uint64][]byte) {
	for p := 0; p < len(b); {
		r, n, err := wal.DecodeFrame(b[p:])
		if err != nil {
			p++ // look for the next valid frame, as recovery's resync does
			continue
		}
		into[r.Seq] = r.Payload
		p += n
	}
}

// WALNeverZeroCopies is invariant 1 for the WAL: every record acknowledged durable (seq ->
// payload) whose seq is at or above the durable checkpoint is in the durable image, byte
// for byte. Records below the durable checkpoint were dispatched; invariant 5 covers them.
func WALNeverZeroCopies(img WALImage, acked map[uint64][]byte) error {
	for _, seq := range sortedKeys(acked) {
		if img.HasCheckpoint && seq < img.Checkpoint {
			continue
		}
		got, ok := img.Records[seq]
		if !ok {
			return fmt.Errorf("invariant 1: acked record seq %d is in no durable copy (durable checkpoint %d)", seq, img.Checkpoint)
		}
		if !bytes.Equal(got, acked[seq]) {
			return fmt.Errorf("invariant 1: acked record seq %d differs in its durable copy", seq)
		}
	}
	return nil
}

// CheckpointNeverPassesWork is invariant 5 for the WAL: the durable checkpoint is never
// beyond the highest checkpoint the dispatcher asked for.
func CheckpointNeverPassesWork(img WALImage, dispatchedBelow uint64) error {
	if img.HasCheckpoint && img.Checkpoint > dispatchedBelow {
		return fmt.Errorf("invariant 5: durable checkpoint %d passes undispatched work (dispatched below %d)", img.Checkpoint, dispatchedBelow)
	}
	return nil
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
