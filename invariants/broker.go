package invariants

import (
	"slices"
	"strings"

	"github.com/narad/narad/core/plog"
)

// BrokerImage is what one node's durable files say about the messages it holds: those in
// its WAL at or above the durable checkpoint (by message id, with their payloads), and
// every CRC-valid partition record by partition directory and offset. Damaged frames are
// skipped, as recovery skips them. Message ids come from the payloads (the simulators
// write them there).
type BrokerImage struct {
	WALIDs map[uint64][]byte            // id -> payload
	Parts  map[string]map[uint64][]byte // partition dir -> offset -> payload
	IDs    map[uint64]bool              // ids in any partition record
}

// ReadBrokerImage decodes the durable files of one node (name -> bytes): the WAL under
// "wal", the partition logs under "parts/<dir>/*.log"; id reads a payload's message id.
// A partition's segments are read in name order (their base offsets) and, as recovery
// does (core/plog, rows R2 and R4), a valid frame counts only if its base offset is at or
// above the end of the frames before it: a frame of another log that a misdirected write
// left past the damage is not this partition's record (cluster seed 614394). For the
// same reason a frame is checked from its directory's tag (plog.DecodeBatchFor): a
// tagged frame of another partition fails it there (cluster seed 8865).
func ReadBrokerImage(files map[string][]byte, id func([]byte) (uint64, bool)) BrokerImage {
	img := BrokerImage{WALIDs: map[uint64][]byte{}, Parts: map[string]map[uint64][]byte{}, IDs: map[uint64]bool{}}
	w := ReadWALImage(files, "wal")
	for seq, p := range w.Records { //narad:unordered (builds a map)
		if w.HasCheckpoint && seq < w.Checkpoint {
			continue
		}
		if i, ok := id(p); ok {
			img.WALIDs[i] = p
		}
	}
	names := make([]string, 0, len(files))
	for name := range files { //narad:sorted
		names = append(names, name)
	}
	slices.Sort(names)
	next := map[string]uint64{} // partition dir -> the offset after its frames so far
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, "parts/")
		dir, file, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || !strings.HasSuffix(file, ".log") {
			continue
		}
		if img.Parts[dir] == nil {
			img.Parts[dir] = map[uint64][]byte{}
		}
		next[dir] = img.decodeSegment(dir, files[name], next[dir], id)
	}
	return img
}

// decodeSegment adds the records of one segment of partition dir whose frames start at
// or above offset next, and returns the offset after the last one.
func (img *BrokerImage) decodeSegment(dir string, b []byte, next uint64, id func([]byte) (uint64, bool)) uint64 {
	for p := 0; p < len(b); {
		bt, n, err := plog.DecodeBatchFor(b[p:], dir)
		if err != nil || bt.BaseOffset < next {
			p++ // resync on the next valid frame that could follow
			continue
		}
		for i, e := range bt.Entries {
			img.Parts[dir][bt.BaseOffset+uint64(i)] = e.Payload
			if mid, ok := id(e.Payload); ok {
				img.IDs[mid] = true
			}
		}
		p += n
		next = bt.BaseOffset + uint64(len(bt.Entries))
	}
	return next
}
