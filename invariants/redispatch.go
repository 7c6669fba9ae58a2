package invariants

import "github.com/narad/narad/core/dispatch"

// RedispatchExplains reports whether a duplicate of a message can be blamed on the
// dispatcher of the node that accepted it committing the record a second time after that
// node crashed ("re-dispatch after a crash", one of the causes a duplicate may be given).
//
//	firstNs    when the message was first delivered (its earliest delivery of all)
//	dupNs      when the duplicate being explained was delivered (a later delivery of
//	           another copy of the record: another partition offset)
//	crashesNs  every time the accepting node stopped other than cleanly (any order): a
//	           crash, or a failure that stopped it (its checkpoint writes stop there)
//	boundNs    dispatch.RedispatchBoundNs(the WAL's CheckpointSyncIntervalNs, the longest a
//	           commit answer may take: 0 for a single node, the dispatcher's
//	           CommitTimeoutNs where a remote owner's answer can be lost), or 0 for
//	           dispatch.RedispatchWindowNs
//
// The rule is sound: it never refuses a duplicate that re-dispatch after a crash can
// cause (it may accept one that had another cause; the rule cannot tell). The dispatcher
// writes the records it has committed
// with its checkpoint (the skip-set, core/dispatch doc.go) at most the checkpoint flush
// interval after their commit was answered, so a restart commits again only records whose
// first commit was answered within that interval before the crash, or was in flight at
// it (the bound's margin covers those and the checkpoint's own write). A first copy
// is delivered only after its commit, so the duplicate is explained by a crash at c only
// if firstNs >= c - boundNs; and the second copy is committed after the restart, so dupNs
// must be after c. A duplicate for which no crash qualifies needs another cause.
func RedispatchExplains(firstNs, dupNs int64, crashesNs []int64, boundNs int64) bool {
	if boundNs <= 0 {
		boundNs = dispatch.RedispatchWindowNs
	}
	for _, c := range crashesNs {
		if firstNs >= c-boundNs && dupNs > c {
			return true
		}
	}
	return false
}
