package nodesim

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/invariants"
)

// image is what the durable files say: every message id held by the WAL at or above its
// durable checkpoint, and every CRC-valid partition record by partition directory and
// offset. Damaged frames are skipped, as recovery skips them.
type image struct {
	walIDs map[uint64][]byte            // id -> payload, from the WAL at or above its checkpoint
	parts  map[string]map[uint64][]byte // partition dir -> offset -> payload
	ids    map[uint64]bool              // ids in any partition record
}

func (u *run) readImage() image {
	files := u.d.DurableFiles()
	img := image{walIDs: map[uint64][]byte{}, parts: map[string]map[uint64][]byte{}, ids: map[uint64]bool{}}
	w := invariants.ReadWALImage(files, "wal")
	for seq, p := range w.Records { //narad:unordered (builds a map)
		if w.HasCheckpoint && seq < w.Checkpoint {
			continue
		}
		if id, ok := payloadID(p); ok {
			img.walIDs[id] = p
		}
	}
	names := make([]string, 0, len(files))
	for name := range files { //narad:sorted
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, "parts/")
		dir, file, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || !strings.HasSuffix(file, ".log") {
			continue
		}
		if img.parts[dir] == nil {
			img.parts[dir] = map[uint64][]byte{}
		}
		img.decodeSegment(dir, files[name])
	}
	return img
}

func (img *image) decodeSegment(dir string, b []byte) {
	for p := 0; p < len(b); {
		bt, n, err := plog.DecodeBatch(b[p:])
		if err != nil {
			p++ // resync on the next valid frame
			continue
		}
		for i, e := range bt.Entries {
			img.parts[dir][bt.BaseOffset+uint64(i)] = e.Payload
			if id, ok := payloadID(e.Payload); ok {
				img.ids[id] = true
			}
		}
		p += n
	}
}

// checkDurable is invariant 1 (and 5: a record below the durable checkpoint must be in a
// partition log): every message answered 202 is in at least one verified durable copy.
func (u *run) checkDurable() {
	if u.err != nil {
		return
	}
	u.stats.Checks++
	img := u.readImage()
	for _, id := range sortedKeys(u.m.acked) {
		if img.ids[id] {
			continue
		}
		p, ok := img.walIDs[id]
		if !ok {
			u.violate(fmt.Errorf("invariant 1: message %d answered 202 is in no durable copy (neither the WAL at or above its checkpoint nor a partition log)", id))
			return
		}
		if !bytes.Equal(p, u.m.produced[id]) {
			u.violate(fmt.Errorf("invariant 1: message %d answered 202 differs in its only durable copy (the WAL)", id))
			return
		}
	}
}

// checkVisibility is invariant 4: a record delivered at an offset stays at that offset in
// its partition's durable log, byte for byte.
func (u *run) checkVisibility() {
	if u.err != nil {
		return
	}
	img := u.readImage()
	for _, pr := range sortedParts(u.m.seen) {
		dir := fmt.Sprintf("%016x-%d", pr.topicID, pr.index)
		offs := u.m.seen[pr]
		for _, off := range sortedKeys(offs) {
			got, ok := img.parts[dir][off]
			if !ok {
				u.violate(fmt.Errorf("invariant 4: offset %d of partition %s was delivered and is gone from the durable log", off, dir))
				return
			}
			if !bytes.Equal(got, u.m.produced[offs[off]]) {
				u.violate(fmt.Errorf("invariant 4: offset %d of partition %s holds other bytes than the message delivered there", off, dir))
				return
			}
		}
	}
}

func sortedParts[V any](m map[partRef]V) []partRef {
	out := make([]partRef, 0, len(m))
	for k := range m { //narad:sorted
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b partRef) int {
		if a.topicID != b.topicID {
			return cmpU64(a.topicID, b.topicID)
		}
		return cmpU64(uint64(a.index), uint64(b.index))
	})
	return out
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
