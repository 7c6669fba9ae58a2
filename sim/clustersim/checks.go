package clustersim

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/narad/narad/core/plog"
	"github.com/narad/narad/invariants"
)

// checkEvery: the durable images are checked every this many events (and at each crash
// and at the end).
const checkEvery = 500

// image is what one node's durable files say: the message ids its WAL holds at or above
// its durable checkpoint (with their payloads), and every CRC-valid partition record by
// partition directory and offset. Damaged frames are skipped, as recovery skips them.
type image struct {
	walIDs map[uint64][]byte
	parts  map[string]map[uint64][]byte
	ids    map[uint64]bool // ids in any partition record
}

func (u *run) readImage(mb *member) image {
	files := mb.d.DurableFiles()
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
	for _, name := range sortedNames(files) {
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

func sortedNames(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for name := range files { //narad:sorted
		names = append(names, name)
	}
	slices.Sort(names)
	return names
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

// checkImages is invariant 1 (with 5: a record below a WAL's durable checkpoint must be
// in a partition log) over the whole cluster: every message answered 202 is in a
// verified durable copy on some node, in a partition log or in a WAL at or above its
// checkpoint, byte for byte. And invariant 4: every offset delivered stays, with the same
// bytes, in the durable log of the node that delivered it.
func (u *run) checkImages() {
	if u.err != nil {
		return
	}
	u.stats.Checks++
	imgs := make([]image, len(u.members))
	for i, mb := range u.members {
		imgs[i] = u.readImage(mb)
	}
	u.checkDurable(imgs)
	u.checkVisibility(imgs)
}

func (u *run) checkDurable(imgs []image) {
	for _, id := range sortedKeys(u.m.acked) {
		if u.inPartitionLog(imgs, id) {
			continue
		}
		found := false
		for _, img := range imgs {
			if p, ok := img.walIDs[id]; ok && bytes.Equal(p, u.m.produced[id]) {
				found = true
				break
			}
		}
		if !found {
			u.violate(fmt.Errorf("invariant 1: message %d answered 202 is in no verified durable copy on any node (no partition log, no WAL at or above its checkpoint)", id))
			return
		}
	}
}

func (u *run) inPartitionLog(imgs []image, id uint64) bool {
	for _, img := range imgs {
		if img.ids[id] {
			return true
		}
	}
	return false
}

// checkVisibility covers the main topic, whose partitions keep their owners: a delivered
// offset must be in the durable log of its partition on some node (any node may deliver
// it: consumes are routed to owners).
func (u *run) checkVisibility(imgs []image) {
	if u.topicID == 0 {
		return // not known yet (the create's answer was lost)
	}
	for _, part := range slices.Sorted(maps.Keys(u.m.seen)) {
		offs := u.m.seen[part]
		for _, off := range sortedKeys(offs) {
			found := false
			for i, img := range imgs {
				got, ok := img.partition(u.topicID, part)[off]
				if ok && !bytes.Equal(got, u.m.produced[offs[off]]) {
					u.violate(fmt.Errorf("invariant 4: offset %d of partition %d on node %d holds other bytes than the message delivered there", off, part, i+1))
					return
				}
				found = found || ok
			}
			if !found {
				u.violate(fmt.Errorf("invariant 4: offset %d of partition %d was delivered and is gone from every durable log", off, part))
				return
			}
		}
	}
}

// partition is the log of the main topic's partition index (topicID, its incarnation).
func (img image) partition(topicID uint64, index uint32) map[uint64][]byte {
	return img.parts[fmt.Sprintf("%016x-%d", topicID, index)]
}

func sortedKeys[V any](m map[uint64]V) []uint64 { return slices.Sorted(maps.Keys(m)) }
