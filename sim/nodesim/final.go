package nodesim

import "fmt"

// healScanEvery: while records wait to be delivered again, the heal phase looks every
// this many events whether retention may have removed them all.
const healScanEvery = 512

// healed: every acknowledged message was delivered, and every record whose last lease
// was not settled was delivered again (or may have been removed by retention).
func (u *run) healed() bool {
	u.healScans++
	if u.m.missing > 0 && (u.o.RetentionMs == 0 || u.healScans%healScanEvery != 0 || len(u.undelivered()) > 0) {
		return false
	}
	if u.m.unsettled == 0 {
		return true
	}
	return u.healScans%healScanEvery == 0 && u.unsettledRemovable()
}

// finalChecks run once the heal phase ended with every acknowledged message delivered:
// leases (invariant 9: nothing released or expired was left undelivered), then
// porcupine over the partition history.
func (u *run) finalChecks() {
	u.stats.RedeliveryChecked += uint64(len(u.m.recs))
	if err := u.checkRedelivered(); err != nil {
		u.violate(err)
		return
	}
	u.stats.HistoryOps = uint64(u.hist.Ops())
	if err := u.hist.Check(); err != nil {
		u.violate(fmt.Errorf("linearizability: %w", err))
	}
}

// undelivered lists the acknowledged messages never delivered that retention cannot
// have removed: it may have removed a message produced more than the retention ago, once
// a partition it may be on shows records removed (its stats' oldest offset, or a 410).
func (u *run) undelivered() []uint64 {
	var out []uint64
	for _, id := range u.m.undelivered() {
		if !u.retentionMayRemove(id) || !u.removalSeen(id) {
			out = append(out, id)
		}
	}
	return out
}

// removalSeen: a partition message id may be on had records removed by retention.
func (u *run) removalSeen(id uint64) bool {
	s := u.m.sent[id]
	t := u.topics[s.topic]
	for p := range t.parts {
		switch {
		case s.pin >= 0 && int64(p) != s.pin, s.pin < 0 && s.hasKey && p != keyPartition(s.key, t.parts):
			continue
		}
		if u.m.removed[partRef{topicID: t.id, index: p}] > 0 {
			return true
		}
	}
	return false
}
