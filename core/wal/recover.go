package wal

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/frame"
)

type recoveryPhase uint8

const (
	phaseList recoveryPhase = iota + 1
	phaseCheckpointSync
	phaseCheckpoint
	phaseScan
	phaseFinish
)

// recovery is the state of Open: list the directory, read the checkpoint, scan every
// segment frame by frame, then truncate torn tails and create what is missing.
type recovery struct {
	phase   recoveryPhase
	segs    []segment
	hasCkpt bool
	ckpt    checkpointSlot
	ckptOK  bool

	retries   int   // re-reads of the current read or damaged frame
	damageOff int64 // file offset of the damaged frame being retried, -1 for none
	// The resync of the damaged frame at resyncAt (-1 for none), read resyncReads times
	// so far; resyncBest is the earliest valid frame after it any of those reads showed
	// (file offset, -1 for none yet). See confirmResync.
	resyncAt, resyncBest int64
	resyncReads          int
	segIdx               int
	off                  int64 // file offset of the read in flight
	want                 int   // length of the read in flight
	toEOF                bool  // the read in flight covers the rest of the file (for a resync)
	lastSeq              uint64
	records              []Record
	notes                []string
	corrupt              int

	truncs   []segment         // segments whose torn tail is cut: name and new size
	pending  int               // finish-phase ops outstanding
	dirSync  bool              // finish-phase directory sync issued (or not needed)
	truncOps map[uint64]string // truncate op id -> segment name
}

// Open starts recovery. Appends are refused with ErrNotReady until Ready reports
// Recovered.
func (l *Log) Open(nowNs int64) {
	assert.That(l.state == stateNew, "wal: Open called twice")
	l.state = stateRecovering
	l.rec = &recovery{phase: phaseList, damageOff: -1, resyncAt: -1}
	l.issue(purposeRecover, disk.Op{Kind: disk.KindList, Name: l.cfg.Dir})
}

func (l *Log) recoverStep(res disk.Result) {
	rc := l.rec
	switch rc.phase {
	case phaseList:
		l.onList(res)
	case phaseCheckpointSync:
		l.onCheckpointSynced(res)
	case phaseCheckpoint:
		l.onCheckpointRead(res)
	case phaseScan:
		l.onSegmentRead(res)
	case phaseFinish:
		l.onFinishStep(res)
	}
}

func (l *Log) onList(res disk.Result) {
	if res.Err != nil {
		l.fail(res.Err)
		return
	}
	rc := l.rec
	for _, name := range res.Names { // sorted by the contract; fixed-width hex sorts by seq
		if name == CheckpointFile {
			rc.hasCkpt = true
			continue
		}
		hex, ok := strings.CutSuffix(name, ".seg")
		if !ok || len(hex) != 16 {
			continue
		}
		first, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			continue
		}
		rc.segs = append(rc.segs, segment{name: l.cfg.Dir + "/" + name, firstSeq: first})
	}
	if rc.hasCkpt {
		rc.phase = phaseCheckpointSync
		l.issue(purposeRecover, disk.Op{Kind: disk.KindSync, Name: l.checkpointName()})
		return
	}
	rc.note("R1 no checkpoint file: start at the oldest record")
	l.startScan()
}

// onCheckpointSynced: the checkpoint file is synced before it is read. After a process
// crash the dead process's last slot write may still be dirty in the page cache, and a
// device read (O_DIRECT writes dirty pages back first) returns it though a machine crash
// could still lose it; recovery would then compact on a checkpoint that is not durable
// (walsim seed 211). After the sync, what the device read returns is durable.
func (l *Log) onCheckpointSynced(res disk.Result) {
	if res.Err != nil {
		l.fail(fmt.Errorf("syncing the checkpoint: %w", res.Err))
		return
	}
	l.rec.phase = phaseCheckpoint
	l.readCheckpoint()
}

// Recovery reads the device, not the page cache (Op.Device): after a process crash that
// followed a failed fdatasync, Linux still caches the pages the sync lost, marked clean,
// so a cached scan would take never-durable records for the log's tail and the next
// acknowledged group would sit behind bytes a machine crash turns into a torn record
// (walsim seed 20 under issue 11's process crashes).
func (l *Log) readCheckpoint() {
	l.issue(
		purposeRecover,
		disk.Op{Kind: disk.KindReadAt, Device: true, Name: l.checkpointName(), Len: checkpointFileBytes},
	)
}

func (l *Log) onCheckpointRead(res disk.Result) {
	rc := l.rec
	suspect := false
	if res.Err == nil {
		rc.ckpt, rc.ckptOK = decodeCheckpointFile(res.Data)
		suspect = checkpointFileSuspect(res.Data)
	}
	if (res.Err != nil || !rc.ckptOK || suspect) && rc.retries < l.cfg.ReadRetriesMax {
		rc.retries++ // reads may be corrupted in passing: read again before deciding
		l.readCheckpoint()
		return
	}
	if res.Err != nil {
		l.fail(fmt.Errorf("reading the checkpoint: %w", res.Err))
		return
	}
	switch {
	case rc.ckptOK:
		rc.note(fmt.Sprintf("R2 checkpoint slot gen %d: start at seq %d", rc.ckpt.gen, rc.ckpt.seq))
	case frame.IsZero(res.Data):
		rc.note("R1 checkpoint never written: start at the oldest record")
	default:
		rc.note("R3 no valid checkpoint slot: start at the oldest record")
	}
	l.startScan()
}

func (l *Log) startScan() {
	rc := l.rec
	rc.phase = phaseScan
	rc.segIdx, rc.off, rc.retries = 0, 0, 0
	l.readSegment()
}

// readSegment issues the next read of the segment being scanned, or finishes.
func (l *Log) readSegment() {
	rc := l.rec
	if rc.segIdx >= len(rc.segs) {
		l.finishScan()
		return
	}
	rc.want = l.cfg.RecoveryReadBytes
	if rc.toEOF {
		rc.want = int(l.cfg.SegmentBytesMax) + FrameBytesMax
	}
	l.issue(
		purposeRecover,
		disk.Op{
			Kind:   disk.KindReadAt,
			Device: true,
			Name:   rc.segs[rc.segIdx].name,
			Off:    rc.off,
			Len:    rc.want,
		},
	)
}

func (l *Log) nextSegment(size int64) {
	rc := l.rec
	rc.segs[rc.segIdx].size = size
	rc.segIdx++
	rc.off, rc.retries, rc.toEOF, rc.damageOff, rc.resyncAt = 0, 0, false, -1, -1
	l.readSegment()
}

// ResyncConfirmReads is how many more times a resync reads the rest of the segment
// before it decides. Read faults are transient and independent per read (DESIGN.md
// section 3), so hiding one valid frame from every read takes that many faults in a row
// on the same frame; more reads would cost every recovery of a damaged segment a full
// re-read each (with 8, walsim seeds 11 and 287 spent their steps recovering).
const ResyncConfirmReads = 2

// confirmResync takes one read's resync result for the damaged frame at abs: found is
// the file offset of the first valid frame after it in that read, -1 for none. A resync
// decision (row R6's skip, R7's cut) rests on the bytes after the damage, and a read can
// be corrupted in passing there too: a valid frame it hides would be skipped or cut, and
// an acknowledged record lost with it (walsim seeds 400 and 409: rot, then a read fault
// in the next frame). So the rest of the segment is read ResyncConfirmReads more times
// and the earliest valid frame any read showed wins. It reports whether the decision is made,
// and where to resume (-1: nothing valid follows).
func (rc *recovery) confirmResync(abs, found int64, reads int) (decided bool, at int64) {
	if rc.resyncAt != abs {
		rc.resyncAt, rc.resyncReads, rc.resyncBest = abs, 0, -1
	}
	if found >= 0 && (rc.resyncBest < 0 || found < rc.resyncBest) {
		rc.resyncBest = found
	}
	if rc.resyncReads < reads {
		rc.resyncReads++
		return false, 0
	}
	return true, rc.resyncBest
}

func (rc *recovery) note(s string) { rc.notes = append(rc.notes, s) }

// minSeq is the smallest seq the next valid frame of the current segment may carry.
func (rc *recovery) minSeq() uint64 {
	return max(rc.lastSeq+1, rc.segs[rc.segIdx].firstSeq)
}

// findResync looks in b, from index from on, for the start of a valid frame whose seq is
// at least minSeq. It returns its index or -1. A cheap header filter runs before the CRC.
func findResync(b []byte, from int, minSeq uint64) int {
	for q := from; q+frameHeaderBytes+bodyFixedBytes <= len(b); q++ {
		if b[q+8] != formatV1 {
			continue
		}
		bodyLen := binary.LittleEndian.Uint32(b[q+4:])
		if bodyLen < bodyFixedBytes || int(bodyLen) > len(b)-q-frameHeaderBytes {
			continue
		}
		if binary.LittleEndian.Uint64(b[q+frameHeaderBytes:]) < minSeq {
			continue
		}
		if _, _, err := DecodeFrame(b[q:]); err == nil {
			return q
		}
	}
	return -1
}
