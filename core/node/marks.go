package node

import (
	"cmp"
	"maps"
	"slices"

	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/wire"
)

// Partition marks: what each member last said of the partitions it owns (high watermark
// and oldest offset, under the partition's epoch), so that a forget answers the records
// it gives up at last contact. A member's heartbeat to the metastore leader carries its
// marks (a window of wire.HeartbeatMarksMax at a time, in turns); the leader records
// them with its own, and passes its table on to each follower with a raft message at
// most once a heartbeat interval. Every member thus holds the leader's table, including
// the marks of a leader that died. A table keeps, per partition, the mark of the owner
// that meta names at the current epoch: the greatest (high watermark, oldest) heard.

type marksState struct {
	table    map[uint64]map[partKey]wire.Mark // member → its partitions' marks
	cursor   int                              // the window of the next heartbeat
	gossipAt map[uint64]int64                 // follower → when the table goes next
}

// ownMarks are this node's marks of the partitions it owns and serves: all of them, or
// the next window of wire.HeartbeatMarksMax.
func (n *Node) ownMarks() []wire.Mark {
	self := n.meta.ID()
	var out []wire.Mark
	for _, pk := range slices.SortedFunc(maps.Keys(n.parts), comparePartKeys) {
		p := n.parts[pk]
		if owner, _ := n.PartitionOwner(pk.topicID, pk.index); owner != self || !p.ready() {
			continue
		}
		out = append(out, wire.Mark{TopicID: pk.topicID, Partition: pk.index,
			Epoch: n.meta.PartitionEpoch(pk.topicID, pk.index), Oldest: p.log.OldestOffset(),
			HW: p.log.HighWatermark()})
	}
	if len(out) <= wire.HeartbeatMarksMax {
		return out
	}
	start := n.marks.cursor % len(out)
	n.marks.cursor = start + wire.HeartbeatMarksMax
	window := slices.Concat(out[start:], out[:start])
	return window[:wire.HeartbeatMarksMax]
}

// recordMarks merges member's marks into the table, keeping only those of a partition
// it owns at the current epoch.
func (n *Node) recordMarks(member uint64, marks []wire.Mark) {
	if n.marks.table == nil {
		n.marks.table = map[uint64]map[partKey]wire.Mark{}
	}
	t := n.marks.table[member]
	if t == nil {
		t = map[partKey]wire.Mark{}
		n.marks.table[member] = t
	}
	for _, k := range marks {
		pk := partKey{k.TopicID, k.Partition}
		if !n.markCurrent(member, k) {
			continue
		}
		if old, ok := t[pk]; !ok || laterMark(k, old) {
			t[pk] = k
		}
	}
}

// laterMark: k is a later state of the partition than old (a greater high watermark,
// or the same with a greater oldest offset): a log's both only grow.
func laterMark(k, old wire.Mark) bool {
	return cmp.Or(cmp.Compare(k.HW, old.HW), cmp.Compare(k.Oldest, old.Oldest)) > 0
}

// markCurrent: member owns k's partition at k's epoch on this replica.
func (n *Node) markCurrent(member uint64, k wire.Mark) bool {
	owner, ok := n.PartitionOwner(k.TopicID, k.Partition)
	return ok && owner == member && n.meta.PartitionEpoch(k.TopicID, k.Partition) == k.Epoch
}

// pruneMarks drops the marks of members gone and of partitions their owner no longer
// holds at that epoch (each heartbeat interval): the table stays as large as the
// partitions are many.
func (n *Node) pruneMarks() {
	for _, member := range slices.Sorted(maps.Keys(n.marks.table)) {
		t := n.marks.table[member]
		if !n.meta.IsMember(member) {
			delete(n.marks.table, member)
			continue
		}
		maps.DeleteFunc(t, func(_ partKey, k wire.Mark) bool { return !n.markCurrent(member, k) })
	}
}

// marksTable is the table a leader passes on, at most wire.TableMarksMax marks (the
// members' in id order, each one's in partition order; past that bound, the rest waits
// for a table that has room).
func (n *Node) marksTable() []wire.MemberMarks {
	out := []wire.MemberMarks{}
	room := wire.TableMarksMax
	for _, member := range slices.Sorted(maps.Keys(n.marks.table)) {
		t := n.marks.table[member]
		if room == 0 || len(out) == wire.TableMembersMax {
			break
		}
		keys := slices.SortedFunc(maps.Keys(t), comparePartKeys)
		keys = keys[:min(len(keys), room)]
		mm := wire.MemberMarks{Member: member, Marks: make([]wire.Mark, 0, len(keys))}
		for _, pk := range keys {
			mm.Marks = append(mm.Marks, t[pk])
		}
		room -= len(keys)
		out = append(out, mm)
	}
	return out
}

// tableFor is the table to send follower to with a raft message now, or nil: only a
// leader sends it, once a heartbeat interval per follower.
func (n *Node) tableFor(nowNs int64, to uint64) []wire.MemberMarks {
	if !n.meta.Leader() || nowNs < n.marks.gossipAt[to] {
		return nil
	}
	if n.marks.gossipAt == nil {
		n.marks.gossipAt = map[uint64]int64{}
	}
	n.marks.gossipAt[to] = nowNs + n.heartbeatInterval()
	return n.marksTable()
}

// onMarksTable merges a table from the leader: every member's marks but this node's own.
func (n *Node) onMarksTable(table []wire.MemberMarks) {
	if mutNoMarksTable {
		return
	}
	for _, mm := range table {
		if mm.Member != n.meta.ID() {
			n.recordMarks(mm.Member, mm.Marks)
		}
	}
}

// lastMarks are member id's marks of plan's partitions at the epoch the plan ends (those
// it gives up); a partition without one is left out (not heard of at that epoch).
func (n *Node) lastMarks(id uint64, plan []meta.Reassignment) map[partKey]wire.Mark {
	out := map[partKey]wire.Mark{}
	t := n.marks.table[id]
	for _, r := range plan {
		pk := partKey{r.TopicID, r.Partition}
		if k, ok := t[pk]; ok && k.Epoch+1 == r.Epoch {
			out[pk] = k
		}
	}
	return out
}
