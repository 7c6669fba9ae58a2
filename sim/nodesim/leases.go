package nodesim

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/dispatch"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// The lease model (DESIGN.md invariants 9 and 10). The node's clock is the simulated
// time, so a client knows its lease's deadline within the time its consume took: the
// lease was taken between the consume's call and its answer.

// leaseView is what a consumer knows of one lease it was given.
type leaseView struct {
	key         recKey
	client      int
	epoch       uint64 // the process that gave it
	respNs      int64
	liveUntilNs int64 // the lease holds at least until here: call (or extend) + visibility timeout
	deadNs      int64 // and has expired from here: answer (or extend) + visibility timeout
	ended       bool  // settled or released by an ack answered OK
	reopens     int   // its partition's reopens when it was given (poison.go)
}

// recState is one record delivered under a lease: its last lease and how it ended.
type recState struct {
	id            uint64
	cur           *leaseView
	settledNs     int64  // an ack of cur answered OK at this time (0: none)
	settledDamage uint64 // the disk's damage count of the partition's ack files then
	released      bool   // a nack of cur answered OK
}

// Causes of a duplicate delivery (invariant 10).
const (
	dupExpiry     = iota // the lease's visibility timeout passed
	dupNack              // the holder released it
	dupCrash             // the process died with the record leased (or released) and not acked
	dupAckWindow         // acked, and the process died within the ack-flush window
	dupAckDamage         // acked, and the disk damaged the partition's ack files before a crash
	dupRedispatch        // a second offset: re-dispatched after a crash (deliver.go)
	dupReopen            // the failed partition was reopened with the record leased (poison.go)
	dupAckReopen         // acked, and the ack was lost with the failed partition (poison.go)
	dupCauses
)

var dupNames = [dupCauses]string{"expiry", "nack", "crash", "ack_window", "ack_damage", "redispatch", "reopen", "ack_reopen"}

// RedispatchBoundNs bounds how long before a crash a record's first commit may have been
// for the restart to commit it a second time (invariants.RedispatchExplains): the WAL's
// checkpoint flush interval (the skip-set of committed records is written with the
// checkpoint) plus a margin for commits in flight at the crash; a single node's commits
// are local, so their answers are never lost (dispatch.RedispatchBoundNs).
var RedispatchBoundNs = dispatch.RedispatchBoundNs(0, 0)

// redispatchAfterCrash: some crash after message id was produced, and before now,
// explains a second copy: within the re-dispatch bound of its first delivery, or at any
// distance while the WAL's checkpoint writes found no space (the durable checkpoint lags).
func (u *run) redispatchAfterCrash(id uint64, firstNs int64) bool {
	var after []int64
	for _, c := range u.crashes {
		if c > u.m.sent[id].callNs {
			after = append(after, c)
			if c < u.s.Now() && u.poison.CheckpointStalledWithin(firstNs-RedispatchBoundNs, c) {
				return true // the durable checkpoint lagged: its writes found no space
			}
		}
	}
	return invariants.RedispatchExplains(firstNs, u.s.Now(), after, RedispatchBoundNs)
}

// ackPersistOpsMax is how many disk ops an ack can wait for after its flush time: the
// flush in flight (write, fdatasync), a compaction (7 ops, core/lease doc.go), then its
// own write and fdatasync.
const ackPersistOpsMax = 11

// ackWindowNs is the ack-flush window: an ack answered this long before a crash is
// durable. AckFlushIntervalNs, then at most ackPersistOpsMax ops of the slowest latency.
func (u *run) ackWindowNs() int64 {
	return AckFlushIntervalNs + ackPersistOpsMax*max(u.o.OpLatencyNs[1], u.o.SyncLatencyNs[1])
}

// crashAfter is the first crash after t.
func (u *run) crashAfter(t int64) int64 {
	for _, c := range u.crashes {
		if c >= t {
			return c
		}
	}
	return -1
}

// checkLease is invariants 9 and 10 for a leased delivery: a record delivered before is
// redelivered only for a cause.
func (u *run) checkLease(req request, t topicInfo, msg node.Message, id uint64) error {
	u.stats.LeaseChecked++
	now := u.s.Now()
	k := recKey{pr: partRef{topicID: t.id, index: msg.Partition}, off: msg.Offset}
	vis := u.o.VisibilityMs * 1_000_000
	lv := &leaseView{key: k, client: req.client, epoch: u.epoch, respNs: now, liveUntilNs: req.callNs + vis, deadNs: now + vis,
		reopens: u.poison.Reopens(k.pr.ref())}
	if _, ok := u.m.handles[msg.ReceiptHandle]; ok || msg.ReceiptHandle == "" {
		return fmt.Errorf("invariant 9: offset %d of %s delivered with a receipt handle %q given before (or none)", k.off, partName(k.pr), msg.ReceiptHandle)
	}
	u.m.handles[msg.ReceiptHandle] = lv
	r := u.m.recs[k]
	if r == nil {
		u.m.recs[k] = &recState{id: id, cur: lv}
		u.m.unsettled++
		return nil
	}
	cause, err := u.redeliveryCause(r, req.client)
	if err != nil {
		return err
	}
	u.stats.Dups[cause]++
	u.stats.Duplicates++
	if r.settledNs != 0 {
		u.m.unsettled++
	}
	r.cur, r.settledNs, r.released = lv, 0, false
	return nil
}

// redeliveryCause names why r's record is delivered again now, or the violation.
func (u *run) redeliveryCause(r *recState, client int) (int, error) {
	now, prev := u.s.Now(), r.cur
	crashed := prev.epoch != u.epoch
	reopened := prev.reopens != u.poison.Reopens(prev.key.pr.ref())
	where := fmt.Sprintf("offset %d of %s (message %d)", prev.key.off, partName(prev.key.pr), r.id)
	switch {
	case r.settledNs != 0 && u.ackLostWithPartition(prev.key.pr, r.settledNs, crashed, reopened):
		return dupAckReopen, nil
	case r.settledNs != 0 && !crashed:
		return 0, fmt.Errorf("invariant 9: %s delivered again at %d ns after an ack answered OK at %d ns, with no crash between", where, now, r.settledNs)
	case r.settledNs != 0:
		c := u.crashAfter(r.settledNs)
		switch {
		case r.settledNs >= c-u.ackWindowNs():
			return dupAckWindow, nil
		case u.crashDamage[ackDir(prev.key.pr)] > r.settledDamage:
			return dupAckDamage, nil
		}
		return 0, fmt.Errorf("invariant 9: %s delivered again at %d ns after an ack answered OK at %d ns, %d ns before the crash at %d ns (the ack-flush window is %d ns), and the disk damaged no ack file of its partition between the ack and the last crash",
			where, now, r.settledNs, c-r.settledNs, c, u.ackWindowNs())
	case crashed:
		return dupCrash, nil
	case reopened:
		return dupReopen, nil
	case r.released:
		return dupNack, nil
	case now < prev.liveUntilNs:
		return 0, fmt.Errorf("invariant 9: %s delivered to client %d at %d ns while the lease of client %d holds until at least %d ns",
			where, client, now, prev.client, prev.liveUntilNs)
	}
	return dupExpiry, nil
}

// ackDir is the directory of a partition's ack files (core/node partDir).
func ackDir(pr partRef) string { return fmt.Sprintf("acks/%016x-%d", pr.topicID, pr.index) }

// noteCrashDamage remembers, at a crash, the disk's damage count of every partition's
// ack files (sim.Disk.Damage). An ack answered OK outside the ack-flush window is lost
// only if the device damaged those files after it and before a crash: a corrupted, lost
// or misdirected write (its own or another file's landing on its dirty bytes) fails its
// CRC at recovery (core/lease rows S3, L4, L5), and a damaged snapshot loses every ack
// it held, older ones included.
func (u *run) noteCrashDamage() {
	for _, t := range u.topics {
		for i := uint32(0); i < t.parts; i++ {
			dir := ackDir(partRef{topicID: t.id, index: i})
			u.crashDamage[dir] = u.d.Damage(dir)
		}
	}
}

// checkAckResults checks the answer of an ack, extend or nack per handle (invariant 9):
// a lease that certainly holds is answered OK; one that ended (acked, released, lost with
// the process, expired, or its record leased again) is answered ErrLeaseGone.
func (u *run) checkAckResults(req request, resp node.Response) error {
	if resp.Err != nil {
		return nil // the node was not ready: nothing was done
	}
	if len(resp.Results) != len(req.handles) {
		return fmt.Errorf("invariant 9: an ack of %d handles answered %d results", len(req.handles), len(resp.Results))
	}
	for i, h := range req.handles {
		if err := u.checkAckResult(h, req.mode, resp.Results[i]); err != nil {
			return err
		}
	}
	return nil
}

func (u *run) checkAckResult(h string, mode node.AckMode, res error) error {
	u.stats.AcksChecked++
	now, lv := u.s.Now(), u.m.handles[h]
	r := u.m.recs[lv.key]
	gone := ""
	switch {
	case lv.ended:
		gone = "its lease was acked or released"
	case lv.epoch != u.epoch:
		gone = "the process that leased it died"
	case lv.reopens != u.poison.Reopens(lv.key.pr.ref()):
		gone = "its partition was reopened after a failure"
	case r.cur != lv:
		gone = fmt.Sprintf("its record went to client %d", r.cur.client)
	case now >= lv.deadNs:
		gone = fmt.Sprintf("its lease expired by %d ns", lv.deadNs)
	}
	what := fmt.Sprintf("%s of offset %d of %s (message %d, leased by client %d at %d ns)", modeName(mode), lv.key.off, partName(lv.key.pr), r.id, lv.client, lv.respNs)
	switch {
	case res == nil && gone != "":
		return fmt.Errorf("invariant 9: %s answered OK at %d ns, but %s", what, now, gone)
	case res == nil:
		u.applyAck(lv, r, mode)
	case !errors.Is(res, node.ErrLeaseGone):
		return fmt.Errorf("invariant 9: %s answered %v", what, res)
	case gone == "" && now < lv.liveUntilNs && !u.mayBeRemoved(lv.key) && !u.poison.Failing(lv.key.pr.ref()):
		return fmt.Errorf("invariant 9: %s answered %v at %d ns, and the lease holds until at least %d ns", what, res, now, lv.liveUntilNs)
	}
	return nil
}

func (u *run) applyAck(lv *leaseView, r *recState, mode node.AckMode) {
	now := u.s.Now()
	switch mode {
	case node.AckSettle:
		lv.ended = true
		r.settledNs, r.settledDamage = now, u.d.Damage(ackDir(lv.key.pr))
		u.m.unsettled--
	case node.AckRelease:
		lv.ended, r.released = true, true
	case node.AckExtend:
		vis := u.o.VisibilityMs * 1_000_000
		lv.liveUntilNs, lv.deadNs = now+vis, now+vis
	}
}

func modeName(m node.AckMode) string {
	switch m {
	case node.AckExtend:
		return "an extend"
	case node.AckRelease:
		return "a nack"
	}
	return "an ack"
}

// unsettledRemovable: every record whose last lease was not settled may have been removed by
// retention (so it cannot be delivered again).
func (u *run) unsettledRemovable() bool {
	return len(u.unsettledKept(1)) == 0
}

// unsettledKept lists up to n records whose last lease was not settled and which
// retention cannot have removed: each must still be delivered again (invariant 9).
func (u *run) unsettledKept(n int) []recKey {
	var out []recKey
	if u.m.unsettled == 0 {
		return nil
	}
	for _, pr := range sortedParts(u.m.offsets) {
		for _, off := range u.m.offsets[pr] {
			k := recKey{pr: pr, off: off}
			r := u.m.recs[k]
			if r == nil || r.settledNs != 0 {
				continue
			}
			if u.mayBeRemoved(k) {
				continue
			}
			if out = append(out, k); len(out) == n {
				return out
			}
		}
	}
	return out
}

// checkRedelivered is invariant 9's "a nacked or expired record is delivered again"
// after healing.
func (u *run) checkRedelivered() error {
	ks := u.unsettledKept(1)
	if len(ks) == 0 {
		return nil
	}
	k := ks[0]
	r := u.m.recs[k]
	return fmt.Errorf("invariant 9: offset %d of %s (message %d), last leased by client %d at %d ns and never acked, was not delivered again by the end of the heal phase (%d records so)",
		k.off, partName(k.pr), r.id, r.cur.client, r.cur.respNs, u.m.unsettled)
}
