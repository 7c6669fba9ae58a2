package plog

// Serving: reads below the high-watermark, and retention, which decides how long what is
// below it stays (OldestOffset).

import (
	"errors"
	"fmt"
	"sort"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// readWaiter is one Read waiting for a fetch.
type readWaiter struct {
	token  uint64
	offset uint64
	max    int
}

// fetch is the ReadAt of one batch frame that is not cached, and every Read waiting for
// it: reads of the same batch that arrive while it is in flight join it instead of
// reading the frame again (the node reads a leased batch one record at a time).
type fetch struct {
	seg     string   // segment file holding the batch
	ref     batchRef // a copy: retention or a roll may change the index meanwhile
	retries int
	waiters []readWaiter // in arrival order, which is the order they are answered in
}

// errMisplaced: a frame that is valid but not the batch the index says is there.
var errMisplaced = errors.New("plog: frame is not the indexed batch")

// Read asks for up to maxRecords records starting at offset, from the one batch that holds
// offset. The answer is a ReadDone with the same token; it comes at once when there is
// nothing to read, on an error, or when the batch is in the read cache, and otherwise
// after one ReadAt of the batch's frame (shared with the other reads of that batch in
// flight). Only offsets below the high-watermark are served; at or past it the answer is
// empty with a nil error, as it is for maxRecords < 1. Reads go on after a failed
// fdatasync, and may run alongside each other and a commit.
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
	}
	seg, ref, ok := l.locate(offset)
	if !ok {
		// A hole recovery found: the bytes that held it failed their CRC.
		l.stats.ReadsCorrupt++
		l.answerRead(token, nil, fmt.Errorf("%w: offset %d lies in a damaged range", ErrCorrupt, offset))
		return
	}
	if cb := l.cache.get(ref.base); cb != nil {
		assert.That(
			cb.ref == ref && ref.base+uint64(ref.count) <= l.hw,
			"plog: a cached batch differs from the index",
		)
		l.stats.ReadCacheHits++
		l.answerRead(token, cb.serve(offset, maxRecords), nil)
		return
	}
	if l.readsWaiting >= ReadsInFlightMax {
		l.answerRead(token, nil, ErrBusy)
		return
	}
	l.stats.ReadCacheMisses++
	l.readsWaiting++
	w := readWaiter{token: token, offset: offset, max: maxRecords}
	if f := l.fetching[ref.base]; f != nil {
		assert.That(f.ref == ref, "plog: a fetch in flight differs from the index")
		l.stats.ReadsJoined++
		f.waiters = append(f.waiters, w)
		return
	}
	f := &fetch{seg: seg.name, ref: ref, waiters: []readWaiter{w}}
	l.fetching[ref.base] = f
	l.issueFetch(f)
}

func (l *Log) answerRead(token uint64, recs []Stored, err error) {
	l.stats.Reads++
	l.out.Reads = append(l.out.Reads, ReadDone{Token: token, Records: recs, Err: err})
}

// locate finds the batch holding offset, which must be in [oldest, hw). It returns false
// for an offset in a hole.
func (l *Log) locate(offset uint64) (*segment, batchRef, bool) {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	assert.That(i >= 0, "plog: an offset at or above the oldest lies before the first segment")
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

func (l *Log) issueFetch(f *fetch) {
	id := l.issue(
		purposeRead,
		disk.Op{Kind: disk.KindReadAt, Name: f.seg, Off: f.ref.pos, Len: int(f.ref.size)},
	)
	l.fetches[id] = f
}

// readStep checks what came back. Bytes are served only when the whole frame passes its
// CRC and is the batch the index expects; anything else is read again, and reported
// ErrCorrupt when every read fails (read corruption is transient in the fault model). A
// batch that retention removed meanwhile is answered ErrRemoved, like a Read of it now.
// A frame that passes is cached and every waiting read is answered from it.
func (l *Log) readStep(res disk.Result) {
	f, ok := l.fetches[res.ID]
	assert.That(ok, "plog: read completion with no fetch waiting")
	delete(l.fetches, res.ID)
	if f.ref.base < l.oldest {
		// Segments go whole, so the batch lies entirely below OldestOffset, and so does
		// every offset waiting for it. Whatever the read returned, it is not served.
		l.finishFetch(f, nil, ErrRemoved)
		return
	}
	if res.Err != nil {
		l.retryFetch(f, res.Err)
		return
	}
	bt, n, err := DecodeBatchFor(res.Data, l.cfg.Dir)
	if err == nil &&
		(n != len(res.Data) || bt.BaseOffset != f.ref.base || len(bt.Entries) != int(f.ref.count)) {
		err = errMisplaced
	}
	if err != nil {
		l.retryFetch(f, err)
		return
	}
	// res.Data came from the disk for this op alone, and the log hands out only copies of
	// it: the cache may keep the entries that alias it.
	l.finishFetch(f, l.cache.put(f.ref, bt), nil)
}

func (l *Log) retryFetch(f *fetch, cause error) {
	if f.retries < l.cfg.ReadRetriesMax {
		f.retries++
		l.stats.ReadRetries++
		l.issueFetch(f)
		return
	}
	l.stats.ReadsCorrupt += uint64(len(f.waiters))
	l.finishFetch(
		f,
		nil,
		fmt.Errorf(
			"%w: batch at offset %d after %d reads: %v",
			ErrCorrupt,
			f.ref.base,
			f.retries+1,
			cause,
		),
	)
}

// finishFetch answers every read waiting for f, in arrival order: from cb when it is
// set, else with err.
func (l *Log) finishFetch(f *fetch, cb *cachedBatch, err error) {
	assert.That(l.fetching[f.ref.base] == f, "plog: finishing a fetch that is not in flight")
	delete(l.fetching, f.ref.base)
	l.readsWaiting -= len(f.waiters)
	assert.That(l.readsWaiting >= 0, "plog: more reads finished than were waiting")
	for _, w := range f.waiters {
		if cb != nil {
			l.answerRead(w.token, cb.serve(w.offset, w.max), nil)
		} else {
			l.answerRead(w.token, nil, err)
		}
	}
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
	l.cache.dropBelow(l.oldest) // nor are they served from memory
	l.issue(purposeRetain, disk.Op{Kind: disk.KindRemove, Name: name})
}

func (l *Log) retainStep(nowNs int64, res disk.Result) {
	assert.That(l.removing, "plog: retention step with no removal in flight")
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
