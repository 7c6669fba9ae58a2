package walsim

import (
	"path"
	"slices"
	"strings"

	"github.com/narad/narad/core/wal"
)

// Bit rot at rest, placed where it tests recovery's resync (row R6 of core/wal): at a
// crash, with Options.RotAtCrashProb, one bit of the durable frame of one acknowledged,
// undispatched record flips. The WAL holds the only copy of that record, so its loss is
// the fault's, not the WAL's: the record leaves the model's acknowledged set and is
// counted in Stats.Rotted. Every other acknowledged record must still recover byte for
// byte (invariant 1), the rotten one must never be returned (invariant 3), and the
// records that follow it in its segment must not be lost with it: a recovery that
// resyncs past the damage but drops the next valid frame (narad_mut_skipaftertorn) fails
// invariant 1 here.

// rotAtCrash rots one acknowledged record's durable frame, if the seed draws it.
func (u *run) rotAtCrash() {
	if u.o.RotAtCrashProb == 0 || !u.r.Chance(u.o.RotAtCrashProb) {
		return
	}
	img := u.d.DurableFiles()
	frames := u.durableFrames(img)
	ckpt := uint64(0)
	if b, ok := img[path.Join(u.logDir(), wal.CheckpointFile)]; ok {
		ckpt, _ = wal.DecodeCheckpoint(b)
	}
	var victims []uint64
	for _, seq := range sortedKeys(u.model.acked) {
		if seq >= ckpt && frames[seq].n > 0 {
			victims = append(victims, seq)
		}
	}
	if len(victims) == 0 {
		return
	}
	seq := victims[u.r.Intn(len(victims))]
	f := frames[seq]
	if !u.d.RotAt(f.name, f.off+int64(u.r.Intn(f.n))) {
		return
	}
	u.stats.Rotted++
	u.record('R', seq)
	delete(u.model.acked, seq)
}

// frameAt is where one record's frame lies in the durable image.
type frameAt struct {
	name string
	off  int64
	n    int
}

// durableFrames finds the valid frames of the durable segments: seq -> its last frame in
// name order (a seq reused after a truncated tail lives in a later segment).
func (u *run) durableFrames(img map[string][]byte) map[uint64]frameAt {
	out := map[uint64]frameAt{}
	names := make([]string, 0, len(img))
	for name := range img { //narad:unordered (sorted below)
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if path.Dir(name) != u.logDir() || !strings.HasSuffix(name, ".seg") {
			continue
		}
		b := img[name]
		for p := 0; p < len(b); {
			r, n, err := wal.DecodeFrame(b[p:])
			if err != nil {
				p++
				continue
			}
			out[r.Seq] = frameAt{name: name, off: int64(p), n: n}
			p += n
		}
	}
	return out
}
