package nodesim

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// partName names a partition in the partition history: topic incarnation and index.
func partName(pr partRef) string { return fmt.Sprintf("%016x-%d", pr.topicID, pr.index) }

// keyPartition is the partition a keyed message must land on: FNV-1a of the key modulo
// the partition count, as core/node computes it. A single node never reroutes.
func keyPartition(key []byte, parts uint32) uint32 {
	h := fnv.New32a()
	h.Write(key)
	return h.Sum32() % parts
}

// checkRead checks one record a client read (a leased delivery or a replay) against
// its produce: the bytes (invariant 3), then the topic, partition and key (invariant 8),
// then that its offset never served another message (invariant 4). It returns the
// message id.
func (u *run) checkRead(req request, msg node.Message) (uint64, error) {
	t := u.topics[req.topic]
	u.stats.BytesChecked++
	id, ok := invariants.MessageID(msg.Payload)
	if !ok || !bytes.Equal(u.m.produced[id], msg.Payload) {
		return 0, fmt.Errorf("invariant 3: delivered a message that was never produced with these bytes (%q…)", msg.Payload[:min(len(msg.Payload), 24)])
	}
	if u.m.refused[id] {
		return 0, fmt.Errorf("invariant 3: delivered message %d whose produce was definitely refused", id)
	}
	if s := u.m.sent[id]; s.callNs > u.s.Now() {
		return 0, fmt.Errorf("invariant 3: delivered message %d before it was produced", id)
	}
	if err := u.checkPlace(req, t, msg, id); err != nil {
		return 0, err
	}
	pr := partRef{topicID: t.id, index: msg.Partition}
	if !u.m.deliveredAt(pr, msg.Offset, id) {
		return 0, fmt.Errorf("invariant 4: offset %d of %s/%d delivered message %d, and another message before", msg.Offset, t.name, msg.Partition, id)
	}
	// A read is recorded at its answer and an absent replay at its call: the high
	// watermark never falls, so what a read saw at some moment in between holds there
	// too. Points keep porcupine's search linear (long polls overlap everything).
	u.hist.Read(partName(pr), msg.Offset, id, u.s.Now(), u.s.Now())
	u.m.commitMs[recKey{pr: pr, off: msg.Offset}] = msg.TimestampMs
	return id, u.noteOffset(id, recKey{pr: pr, off: msg.Offset})
}

// checkPlace is invariant 8 for a record read by req.
func (u *run) checkPlace(req request, t topicInfo, msg node.Message, id uint64) error {
	u.stats.PlaceChecked++
	s := u.m.sent[id]
	want := u.topics[s.topic]
	switch {
	case want.id != t.id || msg.Topic != want.name:
		return fmt.Errorf("invariant 8: message %d produced to topic %s (id %d) was read from topic %s (id %d)", id, want.name, want.id, msg.Topic, t.id)
	case msg.Partition >= want.parts:
		return fmt.Errorf("invariant 8: message %d read from partition %d of %s, which has %d", id, msg.Partition, t.name, want.parts)
	case s.pin >= 0 && int64(msg.Partition) != s.pin && !u.movedTo(t.id, uint32(s.pin), msg.Partition, s.callNs):
		return fmt.Errorf("invariant 8: message %d pinned to partition %d of %s was read from partition %d", id, s.pin, t.name, msg.Partition)
	case s.pin < 0 && s.hasKey && msg.Partition != keyPartition(s.key, want.parts) && !u.movedTo(t.id, keyPartition(s.key, want.parts), msg.Partition, s.callNs):
		return fmt.Errorf("invariant 8: message %d with key %q was read from partition %d of %s, its key's partition is %d", id, s.key, msg.Partition, t.name, keyPartition(s.key, want.parts))
	case msg.HasKey != s.hasKey || !bytes.Equal(msg.Key, s.key):
		return fmt.Errorf("invariant 8: message %d was produced with key %q (has key %v) and read with key %q (has key %v)", id, s.key, s.hasKey, msg.Key, msg.HasKey)
	case req.part >= 0 && int64(msg.Partition) != req.part:
		return fmt.Errorf("invariant 8: a read of partition %d of %s got message %d of partition %d", req.part, t.name, id, msg.Partition)
	case req.kind == reqReplay && msg.Offset != req.offset:
		return fmt.Errorf("invariant 8: a replay of offset %d of %s/%d got offset %d", req.offset, t.name, req.part, msg.Offset)
	}
	return nil
}

// noteOffset: a message read at a second offset was committed twice. The only cause a
// single node has is a re-dispatch after a crash (invariant 10; produces are never
// retried here, so an ambiguous produce makes no second copy).
func (u *run) noteOffset(id uint64, k recKey) error {
	for _, prev := range u.m.keys[id] {
		if prev == k {
			return nil
		}
	}
	if len(u.m.keys[id]) > 0 {
		first, ok := u.m.firstNs[id]
		if !ok {
			first = u.s.Now()
		}
		if !u.redispatchAfterCrash(id, first) {
			return fmt.Errorf("invariant 10: message %d is at offset %d of %s and at %v: a second copy with no crash within %d ns after its first delivery (at %d ns)",
				id, k.off, partName(k.pr), u.m.keys[id][0], RedispatchBoundNs, first)
		}
		u.stats.Dups[dupRedispatch]++
		u.stats.Duplicates++
	}
	u.m.keys[id] = append(u.m.keys[id], k)
	return nil
}

// onConsumed checks every leased delivery and settles it: in the fault phase some are
// acked, some released, some extended, some acked late, some left to expire; while
// healing all are acked at once.
func (u *run) onConsumed(req request, resp node.Response) {
	u.record('c', uint64(len(resp.Messages)), boolBit(resp.Err != nil))
	var settle, release []string
	t := u.topics[req.topic]
	for _, msg := range resp.Messages {
		id, err := u.checkRead(req, msg)
		if err != nil {
			u.violate(err)
			return
		}
		u.m.deliver(id, u.s.Now())
		u.stats.Delivered++
		if err := u.checkLease(req, t, msg, id); err != nil {
			u.violate(err)
			return
		}
		switch x := u.r.Intn(20); {
		case u.healing || x < 11:
			settle = append(settle, msg.ReceiptHandle)
		case x < 13:
			release = append(release, msg.ReceiptHandle)
		case x < 15:
			u.later(req.client, msg.ReceiptHandle, node.AckExtend, u.o.VisibilityMs*1_000_000*int64(3+u.r.Intn(6))/10)
		case x < 17:
			u.later(req.client, msg.ReceiptHandle, node.AckSettle, int64(u.r.Intn(int(2*u.o.VisibilityMs)))*1_000_000)
		case x < 18:
			u.later(req.client, msg.ReceiptHandle, node.AckRelease, int64(u.r.Intn(int(2*u.o.VisibilityMs)))*1_000_000)
		}
	}
	u.sendAcks(req.client, req.topic, settle, node.AckSettle)
	u.sendAcks(req.client, req.topic, release, node.AckRelease)
}

// onReplayed checks a replay by offset: the record, nothing (past the end), or 410.
func (u *run) onReplayed(req request, resp node.Response) {
	u.record('r', uint64(len(resp.Messages)), boolBit(resp.Err != nil))
	t := u.topics[req.topic]
	pr := partRef{topicID: t.id, index: uint32(req.part)}
	switch {
	case errors.Is(resp.Err, node.ErrOffsetRemoved):
		u.stats.Removed410++
		u.m.removed[pr] = max(u.m.removed[pr], req.offset+1)
		if err := u.checkRemoved(pr, req.offset); err != nil {
			u.violate(err)
		}
	case resp.Err != nil:
	case len(resp.Messages) == 0:
		u.hist.ReadAbsent(partName(pr), req.offset, req.callNs, req.callNs)
	case len(resp.Messages) > 1:
		u.violate(fmt.Errorf("invariant 8: a replay of offset %d of %s/%d answered %d records", req.offset, t.name, req.part, len(resp.Messages)))
	default:
		u.stats.Replayed++
		if _, err := u.checkRead(req, resp.Messages[0]); err != nil {
			u.violate(err)
		}
		if resp.Messages[0].ReceiptHandle != "" {
			u.violate(fmt.Errorf("invariant 9: a replay of offset %d of %s/%d came with a lease", req.offset, t.name, req.part))
		}
	}
	u.scheduleNext(req)
}

// onStats records the high watermarks a stats read saw, and how far retention went.
func (u *run) onStats(req request, resp node.Response) {
	u.record('s', uint64(len(resp.Stats)), boolBit(resp.Err != nil))
	if resp.Err == nil {
		t := u.topics[req.topic]
		for _, ps := range resp.Stats {
			pr := partRef{topicID: t.id, index: ps.Index}
			u.hist.HighWatermark(partName(pr), ps.HighWatermark, req.callNs, u.s.Now())
			u.m.removed[pr] = max(u.m.removed[pr], ps.OldestOffset)
			if ps.OldestOffset == 0 {
				continue
			}
			if err := u.checkRemoved(pr, ps.OldestOffset-1); err != nil {
				u.violate(err)
			}
		}
	}
	u.scheduleNext(req)
}

// checkRemoved: retention may have removed the offsets below off (a 410 for off, or an
// oldest offset of off+1). A segment goes only once its newest commit is older than the
// retention, and commit times grow with offsets, so no record at or below off may have
// been committed within the retention of now.
func (u *run) checkRemoved(pr partRef, off uint64) error {
	u.stats.RetentionChecked++
	if u.o.RetentionMs == 0 {
		return fmt.Errorf("invariant 4: offset %d of %s is gone by retention, and the topic keeps records for 7 days", off, partName(pr))
	}
	limitMs := u.s.Now()/1_000_000 - u.o.RetentionMs
	for _, o := range u.m.offsets[pr] {
		c := u.m.commitMs[recKey{pr: pr, off: o}]
		if o <= off && c >= limitMs {
			return fmt.Errorf("invariant 4: offset %d of %s is gone by retention, and offset %d at or below it was committed at %d ms, within the %d ms retention of now",
				off, partName(pr), o, c, u.o.RetentionMs)
		}
	}
	return nil
}
