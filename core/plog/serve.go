package plog

// Serving: reads below the high-watermark, and retention, which decides how long what is
// below it stays (OldestOffset).

import (
	"errors"
	"fmt"
	"sort"

	"github.com/narad/narad/core/disk"
)

// pendingRead is one Read waiting for the disk.
type pendingRead struct {
	token   uint64
	offset  uint64
	max     int
	seg     string   // segment file holding the batch
	ref     batchRef // a copy: retention or a roll may change the index meanwhile
	retries int
}

// errMisplaced: a frame that is valid but not the batch the index says is there.
var errMisplaced = errors.New("plog: frame is not the indexed batch")

// Read asks for up to maxRecords records starting at offset, from the one batch that holds
// offset. The answer is a ReadDone with the same token; it may come at once (nothing to
// read, an error) or after one ReadAt of the batch's frame. Only offsets below the
// high-watermark are served; at or past it the answer is empty with a nil error, as it is
// for maxRecords < 1. Reads go on after a failed fdatasync, and may run alongside each
// other and a commit.
func (l *Log) Read(nowNs int64, token uint64, offset uint64, maxRecords int) {
	switch {
	case l.state == stateNew || l.state == stateRecovering:
		l.answerRead(token, nil, ErrNotReady)
		return
	case l.state == stateFailed:
		l.answerRead(token, nil, l.poisoned)
		return
	case offset >= l.hw || maxRecords < 1:
		l.answerRead(token, nil, nil)
		return
	case offset < l.oldest:
		l.answerRead(token, nil, ErrRemoved)
		return
	case len(l.reads) >= ReadsInFlightMax:
		l.answerRead(token, nil, ErrBusy)
		return
	}
	seg, ref, ok := l.locate(offset)
	if !ok {
		// A hole recovery found: the bytes that held it failed their CRC.
		l.stats.ReadsCorrupt++
		l.answerRead(token, nil, fmt.Errorf("%w: offset %d lies in a damaged range", ErrCorrupt, offset))
		return
	}
	l.issueRead(&pendingRead{token: token, offset: offset, max: maxRecords, seg: seg.name, ref: ref})
}

func (l *Log) answerRead(token uint64, recs []Stored, err error) {
	l.stats.Reads++
	l.out.Reads = append(l.out.Reads, ReadDone{Token: token, Records: recs, Err: err})
}

// locate finds the batch holding offset, which must be in [oldest, hw). It returns false
// for an offset in a hole.
func (l *Log) locate(offset uint64) (*segment, batchRef, bool) {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	assert(i >= 0, "an offset at or above the oldest lies before the first segment")
	seg := &l.segs[i]
	j := sort.Search(len(seg.batches), func(j int) bool { return seg.batches[j].base > offset }) - 1
	if j < 0 {
		return nil, batchRef{}, false
	}
	ref := seg.batches[j]
	if offset >= ref.base+uint64(ref.count) {
		return nil, batchRef{}, false
	}
	return seg, ref, true
}

func (l *Log) issueRead(pr *pendingRead) {
	id := l.issue(purposeRead, disk.Op{Kind: disk.KindReadAt, Name: pr.seg, Off: pr.ref.pos, Len: int(pr.ref.size)})
	l.reads[id] = pr
}

// readStep checks what came back. Bytes are served only when the whole frame passes its
// CRC and is the batch the index expects; anything else is read again, and reported
// ErrCorrupt when every read fails (read corruption is transient in the fault model).
func (l *Log) readStep(res disk.Result) {
	pr, ok := l.reads[res.ID]
	assert(ok, "read completion with no read waiting")
	delete(l.reads, res.ID)
	if res.Err != nil {
		if errors.Is(res.Err, disk.ErrNotExist) && pr.offset < l.oldest {
			l.answerRead(pr.token, nil, ErrRemoved) // retention removed it meanwhile
			return
		}
		l.retryRead(pr, res.Err)
		return
	}
	bt, n, err := DecodeBatch(res.Data)
	if err == nil && (n != len(res.Data) || bt.BaseOffset != pr.ref.base || len(bt.Entries) != int(pr.ref.count)) {
		err = errMisplaced
	}
	if err != nil {
		l.retryRead(pr, err)
		return
	}
	first := int(pr.offset - bt.BaseOffset)
	n = min(pr.max, len(bt.Entries)-first)
	recs := make([]Stored, n)
	for i := range recs {
		e := bt.Entries[first+i]
		recs[i] = Stored{Offset: pr.offset + uint64(i), Key: e.Key, HasKey: e.HasKey, Payload: e.Payload, CommitTimeMs: bt.CommitTimeMs}
	}
	l.answerRead(pr.token, recs, nil)
}

func (l *Log) retryRead(pr *pendingRead, cause error) {
	if pr.retries < l.cfg.ReadRetriesMax {
		pr.retries++
		l.stats.ReadRetries++
		l.issueRead(pr)
		return
	}
	l.stats.ReadsCorrupt++
	l.answerRead(pr.token, nil, fmt.Errorf("%w: offset %d after %d reads: %v", ErrCorrupt, pr.offset, pr.retries+1, cause))
}

// Tick fires deadlines: retention (see NextDeadline).
func (l *Log) Tick(nowNs int64) {
	l.maybeRetain(nowNs)
}

// NextDeadline is the time at which the oldest segment expires under RetentionMs, if
// retention is on and that segment is not the active one. The driver calls Tick then.
func (l *Log) NextDeadline() (int64, bool) {
	if !l.retentionOn() || len(l.segs) < 2 {
		return 0, false
	}
	return (l.segs[0].newestMs + l.cfg.RetentionMs + 1) * 1_000_000, true
}

func (l *Log) retentionOn() bool {
	return l.cfg.RetentionMs > 0 && l.state == stateReady && l.poisoned == nil && !l.removing
}

// expired: the segment's newest commit is older than now - RetentionMs.
func (l *Log) expired(s *segment, nowNs int64) bool {
	return s.newestMs < nowNs/1_000_000-l.cfg.RetentionMs
}

// maybeRetain removes the oldest segment when it has expired, then syncs the directory,
// then looks again. Only the oldest goes, one at a time: removes journal in order, so a
// crash can bring back a suffix of what was removed but never leave a gap in the
// offsets. The active segment is never removed. Expiry is decided in offset order, so a
// clock that went back across a restart only delays removal.
func (l *Log) maybeRetain(nowNs int64) {
	if !l.retentionOn() || len(l.segs) < 2 || !l.expired(&l.segs[0], nowNs) {
		return
	}
	name := l.segs[0].name
	l.removing = true
	l.oldest = l.segs[1].base // reads of the removed offsets are answered ErrRemoved from now
	l.segs = append(l.segs[:0:0], l.segs[1:]...)
	l.issue(purposeRetain, disk.Op{Kind: disk.KindRemove, Name: name})
}

func (l *Log) retainStep(nowNs int64, res disk.Result) {
	assert(l.removing, "retention step with no removal in flight")
	switch res.Kind {
	case disk.KindRemove:
		if res.Err != nil && !errors.Is(res.Err, disk.ErrNotExist) {
			l.removing = false
			l.poison(fmt.Errorf("removing an expired segment: %w", res.Err))
			l.reportFailed()
			return
		}
		l.issue(purposeRetain, disk.Op{Kind: disk.KindSyncDir, Name: l.cfg.Dir})
	case disk.KindSyncDir:
		l.removing = false
		if res.Err != nil {
			l.poison(fmt.Errorf("directory sync after a removal: %w", res.Err))
			l.reportFailed()
			return
		}
		l.stats.SegmentsRemoved++
		l.maybeRetain(nowNs)
	}
}
