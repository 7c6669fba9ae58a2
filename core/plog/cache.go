package plog

import "github.com/narad/narad/core/assert"

// The read cache: decoded batches known good, so that a read of a recent batch needs no
// disk op and no decode. See "Reads" in doc.go for what enters it and when it is dropped.

// decodedEntryBytes is what one decoded Entry costs beyond its frame bytes (two slice
// headers and a bool, 56 bytes on a 64-bit machine). It is charged against
// ReadCacheBytesMax so that a batch of many tiny entries is not counted as tiny.
const decodedEntryBytes = 56

// cachedBatch is one verified batch: its frame was CRC-checked (a read) or compared byte
// for byte with what was written after an fdatasync (a commit's read-back). Its frame
// and its entries, which alias the frame, are never written again by anyone: answers
// copy out of them (serve), and the frame buffer came from a disk Result that the log
// owns and never hands out.
type cachedBatch struct {
	ref        batchRef
	commitMs   int64
	entries    []Entry
	bytes      int          // charged against the byte bound: frame plus decoded entries
	prev, next *cachedBatch // the LRU list: prev is more recently used
}

// readCache holds at most batchesMax batches and bytesMax bytes, evicting the least
// recently used. Lookup is by base offset (the index gives the base of the batch holding
// an offset). The map is only looked up, never ranged over: every scan and every eviction
// walks the list, so the outcome does not depend on map order.
type readCache struct {
	batchesMax int
	bytesMax   int
	byBase     map[uint64]*cachedBatch
	head, tail *cachedBatch // most and least recently used
	bytes      int
}

func newReadCache(batchesMax, bytesMax int) readCache {
	assert.That(batchesMax > 0 && bytesMax > 0, "plog: read cache bounds must be positive")
	return readCache{batchesMax: batchesMax, bytesMax: bytesMax, byBase: map[uint64]*cachedBatch{}}
}

// batchCost is what a batch of this frame size and entry count is charged.
func batchCost(ref batchRef) int {
	return int(ref.size) + int(ref.count)*decodedEntryBytes
}

// get returns the cached batch with this base offset, marking it most recently used, or
// nil.
func (c *readCache) get(base uint64) *cachedBatch {
	cb := c.byBase[base]
	if cb != nil {
		c.unlink(cb)
		c.pushFront(cb)
	}
	return cb
}

// put caches a verified batch decoded from a frame that nobody will write again, and
// returns it. A batch already cached is kept as it is (it is the same batch: a base
// offset names one batch for the life of a Log). A batch larger than the whole byte
// bound is not cached; put then returns a cachedBatch outside the cache, for the caller
// to serve from once.
func (c *readCache) put(ref batchRef, bt Batch) *cachedBatch {
	assert.That(
		bt.BaseOffset == ref.base && len(bt.Entries) == int(ref.count),
		"plog: caching a batch that is not the indexed one",
	)
	if cb := c.byBase[ref.base]; cb != nil {
		assert.That(cb.ref == ref, "plog: one base offset cached for two different batches")
		return c.get(ref.base)
	}
	cb := &cachedBatch{ref: ref, commitMs: bt.CommitTimeMs, entries: bt.Entries, bytes: batchCost(ref)}
	if cb.bytes > c.bytesMax {
		return cb
	}
	for len(c.byBase) >= c.batchesMax || c.bytes+cb.bytes > c.bytesMax {
		c.remove(c.tail)
	}
	c.byBase[ref.base] = cb
	c.bytes += cb.bytes
	c.pushFront(cb)
	c.check()
	return cb
}

// dropBelow removes every batch holding an offset below off (retention moved
// OldestOffset to off).
func (c *readCache) dropBelow(off uint64) {
	for cb := c.head; cb != nil; {
		next := cb.next
		if cb.ref.base < off {
			c.remove(cb)
		}
		cb = next
	}
}

// dropFrom removes every batch holding an offset at or above off (a cut back to the
// high-watermark's position: nothing there may be served).
func (c *readCache) dropFrom(off uint64) {
	for cb := c.head; cb != nil; {
		next := cb.next
		if cb.ref.base+uint64(cb.ref.count) > off {
			c.remove(cb)
		}
		cb = next
	}
}

func (c *readCache) remove(cb *cachedBatch) {
	assert.That(c.byBase[cb.ref.base] == cb, "plog: removing a batch that is not cached")
	delete(c.byBase, cb.ref.base)
	c.bytes -= cb.bytes
	c.unlink(cb)
}

func (c *readCache) pushFront(cb *cachedBatch) {
	cb.prev, cb.next = nil, c.head
	if c.head != nil {
		c.head.prev = cb
	}
	c.head = cb
	if c.tail == nil {
		c.tail = cb
	}
}

func (c *readCache) unlink(cb *cachedBatch) {
	if cb.prev != nil {
		cb.prev.next = cb.next
	} else {
		c.head = cb.next
	}
	if cb.next != nil {
		cb.next.prev = cb.prev
	} else {
		c.tail = cb.prev
	}
	cb.prev, cb.next = nil, nil
}

// check asserts the bounds after every insertion.
func (c *readCache) check() {
	assert.That(
		len(c.byBase) <= c.batchesMax && c.bytes <= c.bytesMax && c.bytes >= 0,
		"plog: read cache over its bounds",
	)
}

// serve copies up to maxRecords records starting at offset out of the batch. Keys and
// payloads go into one new buffer per answer, so the answer belongs to the caller
// entirely: writing into it cannot reach the cache, and the cache never writes into it.
// Every Payload, and every Key of a keyed entry, is non-nil, even when empty (a nil
// payload means "no record" to some callers). offset must lie in the batch.
func (cb *cachedBatch) serve(offset uint64, maxRecords int) []Stored {
	assert.That(
		offset >= cb.ref.base && offset < cb.ref.base+uint64(cb.ref.count),
		"plog: serving an offset outside its batch",
	)
	first := int(offset - cb.ref.base)
	es := cb.entries[first : first+min(maxRecords, len(cb.entries)-first)]
	total := 0
	for i := range es {
		total += len(es[i].Key) + len(es[i].Payload)
	}
	buf := make([]byte, 0, total) // non-nil even when total is 0
	recs := make([]Stored, len(es))
	for i := range es {
		e, r := &es[i], &recs[i]
		r.Offset, r.HasKey, r.CommitTimeMs = offset+uint64(i), e.HasKey, cb.commitMs
		if e.HasKey {
			p := len(buf)
			buf = append(buf, e.Key...)
			r.Key = buf[p:len(buf):len(buf)]
		}
		p := len(buf)
		buf = append(buf, e.Payload...)
		r.Payload = buf[p:len(buf):len(buf)]
	}
	return recs
}
