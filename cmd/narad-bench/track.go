package main

import (
	"encoding/base64"
	"sync"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/benchstat"
)

// The latency mode marks each payload with its run and a message id, at the start of the
// payload, then pads it with letters:
//
//	nbl:RRRRRRRR:IIIIIIIIIIIIIIII:aaaa…
//
// R is the run (8 lowercase hex digits), I the id (16 lowercase hex digits). The mark is
// plain ASCII that JSON never escapes, so the API returns such a payload as a JSON string
// whose first bytes are the mark verbatim.
const (
	markPrefix = "nbl:"
	markLen    = len(markPrefix) + 8 + 1 + 16 + 1 // 30
	markB64Len = markLen / 3 * 4                  // the mark's base64 text, no padding
)

// putMark writes the mark of (run, id) at the start of p (len(p) >= markLen).
func putMark(p []byte, run uint32, id uint64) {
	const digits = "0123456789abcdef"
	copy(p, markPrefix)
	i := len(markPrefix)
	for s := 28; s >= 0; s -= 4 {
		p[i] = digits[run>>uint(s)&0xf]
		i++
	}
	p[i] = ':'
	i++
	for s := 60; s >= 0; s -= 4 {
		p[i] = digits[id>>uint(s)&0xf]
		i++
	}
	p[i] = ':'
}

// parseMark reads the mark at the start of p.
func parseMark(p []byte) (run uint32, id uint64, ok bool) {
	if len(p) < markLen || string(p[:len(markPrefix)]) != markPrefix || p[12] != ':' || p[29] != ':' {
		return 0, 0, false
	}
	r, ok1 := parseHex(p[4:12])
	v, ok2 := parseHex(p[13:29])
	return uint32(r), v, ok1 && ok2
}

// parseHex reads lowercase hex digits (at most 16).
func parseHex(p []byte) (uint64, bool) {
	var v uint64
	for _, c := range p {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// payloadMark reads the mark of a consumed message from its "payload" JSON value and its
// "payload_encoding". A payload that is not a JSON string (JSON payloads are returned
// verbatim) is not one of ours.
func payloadMark(raw []byte, encoding string) (run uint32, id uint64, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return 0, 0, false
	}
	s := raw[1:]
	if encoding != "base64" {
		return parseMark(s)
	}
	if len(s) < markB64Len {
		return 0, 0, false
	}
	var dst [markLen]byte
	if _, err := base64.StdEncoding.Decode(dst[:], s[:markB64Len]); err != nil {
		return 0, 0, false
	}
	return parseMark(dst[:])
}

// The tracker keeps, for every message id of a run, when its produce's 202 was read and
// when a consumer first received it. Ids are issued densely from 0; entries live in chunks
// allocated as ids reach them, so memory follows the number of messages produced.
const (
	trackChunkBits = 16
	trackChunk     = 1 << trackChunkBits
	trackChunksMax = 64
	trackIDsMax    = trackChunk * trackChunksMax // 4,194,304 messages per run
)

const (
	seenAccepted uint32 = 1 << iota // the 202 was read
	seenReceived                    // a consumer received it
)

type trackEntry struct {
	acceptedNs atomic.Int64 // when the 202 was read, ns after base; 0: not (yet)
	receivedNs atomic.Int64 // the first receipt, ns after base; 0: not (yet)
	receipts   atomic.Uint32
	seen       atomic.Uint32 // seenAccepted | seenReceived
}

type trackChunkArr [trackChunk]trackEntry

// tracker is shared by a run's producers and consumers; every method is safe for
// concurrent use and takes no lock.
type tracker struct {
	base     time.Time
	run      uint32
	issued   atomic.Uint64
	chunks   [trackChunksMax]atomic.Pointer[trackChunkArr]
	accepted atomic.Int64 // 202s
	matched  atomic.Int64 // messages both accepted and received
	foreign  atomic.Uint64
	want     atomic.Int64 // matched count that closes all; max until expect
	all      chan struct{}
	allOnce  sync.Once
}

func newTracker(base time.Time, run uint32) *tracker {
	t := &tracker{base: base, run: run, all: make(chan struct{})}
	t.want.Store(1<<63 - 1)
	return t
}

// since is at as ns after base, at least 1 so that 0 means "not yet".
func (t *tracker) since(at time.Time) int64 {
	return max(int64(at.Sub(t.base)), 0) + 1
}

// issue hands out the next id; false once trackIDsMax ids were issued.
func (t *tracker) issue() (uint64, bool) {
	id := t.issued.Add(1) - 1
	if id >= trackIDsMax {
		return 0, false
	}
	c := &t.chunks[id>>trackChunkBits]
	if c.Load() == nil {
		c.CompareAndSwap(nil, new(trackChunkArr))
	}
	return id, true
}

// entry is id's entry, nil for an id never issued.
func (t *tracker) entry(id uint64) *trackEntry {
	if id >= min(t.issued.Load(), trackIDsMax) {
		return nil
	}
	c := t.chunks[id>>trackChunkBits].Load()
	if c == nil {
		return nil
	}
	return &c[id&(trackChunk-1)]
}

// accept records that id's produce was answered 202 at at.
func (t *tracker) accept(id uint64, at time.Time) {
	e := t.entry(id)
	if e == nil {
		panic("narad-bench: accept of an id never issued")
	}
	e.acceptedNs.Store(t.since(at))
	t.accepted.Add(1)
	if e.seen.Or(seenAccepted)&seenReceived != 0 {
		t.match()
	}
}

// receive records a consumer's receipt, at at, of a message whose payload JSON value and
// encoding are given. A payload without this run's mark counts as foreign.
func (t *tracker) receive(payload []byte, encoding string, at time.Time) {
	run, id, ok := payloadMark(payload, encoding)
	var e *trackEntry
	if ok && run == t.run {
		e = t.entry(id)
	}
	if e == nil {
		t.foreign.Add(1)
		return
	}
	if e.receipts.Add(1) != 1 {
		return
	}
	e.receivedNs.Store(t.since(at))
	if e.seen.Or(seenReceived)&seenAccepted != 0 {
		t.match()
	}
}

// match counts one message both accepted and received; Or returning the other bit tells
// exactly one of the two sides that it came second.
func (t *tracker) match() {
	if t.matched.Add(1) >= t.want.Load() {
		t.allOnce.Do(func() { close(t.all) })
	}
}

// expect sets the number of matched messages that closes done: call it once no produce
// is in flight, with the final number of 202s.
func (t *tracker) expect(n int64) {
	t.want.Store(n)
	if t.matched.Load() >= n {
		t.allOnce.Do(func() { close(t.all) })
	}
}

// done is closed once every expected message was received.
func (t *tracker) done() <-chan struct{} { return t.all }

// trackSummary is what the entries say at the end of a run.
type trackSummary struct {
	latency    benchstat.Histogram // 202 → first receipt, for messages with both
	accepted   uint64
	received   uint64 // accepted and received
	lost       uint64 // accepted, never received
	unanswered uint64 // received, but their produce got no 202
	duplicates uint64 // receipts after the first
	early      uint64 // received before their 202 was read (latency counted as 0)
	foreign    uint64
}

// summarize reads every entry; call it once producers and consumers stopped.
func (t *tracker) summarize() trackSummary {
	s := trackSummary{foreign: t.foreign.Load()}
	n := min(t.issued.Load(), trackIDsMax)
	for id := uint64(0); id < n; id++ {
		e := t.entry(id)
		acc, rec := e.acceptedNs.Load(), e.receivedNs.Load()
		if r := e.receipts.Load(); r > 1 {
			s.duplicates += uint64(r - 1)
		}
		switch {
		case acc != 0 && rec != 0:
			s.accepted++
			s.received++
			if rec < acc {
				s.early++
			}
			s.latency.Record(time.Duration(rec - acc))
		case acc != 0:
			s.accepted++
			s.lost++
		case rec != 0:
			s.unanswered++
		}
	}
	return s
}
