package invariants

import (
	"fmt"
	"maps"
	"slices"

	"github.com/anishathalye/porcupine"
)

// PartitionHistory is what clients saw of each partition, for the linearizability check
// of DESIGN.md section 5: a partition is an append-only array whose high watermark only
// grows. Clients see it three ways, and each is an operation with the simulated times it
// was sent and answered:
//
//   - a read of offset o that returned message id (a consume's delivery, or a replay by
//     offset): the array holds id at o, so the high watermark was above o when it ran;
//   - a replay of offset o that found nothing: the high watermark was at or below o;
//   - a high watermark h read from the partition's stats: it was h.
//
// The writes (the partition commits) are not seen by clients; the model lets the high
// watermark rise at any moment (an unseen commit) but never fall. So the check fails when
// a high watermark goes back, when a record is served above a high watermark read after
// it (or an absent replay below it), and when an offset is read as two different ids.
// Nothing here depends on a message's produce, which the other checks cover: this one can
// fail by itself (see the mutation list in sim/doc.go).
type PartitionHistory struct {
	ops       map[string][]porcupine.Operation // partition -> its operations
	vals      map[string]map[uint64]uint64     // partition -> offset -> the id first read there
	conflicts []string                         // offsets read as two ids, in the order seen
}

// NewPartitionHistory returns an empty history.
func NewPartitionHistory() *PartitionHistory {
	return &PartitionHistory{ops: map[string][]porcupine.Operation{}, vals: map[string]map[uint64]uint64{}}
}

type partOpKind uint8

const (
	partRead partOpKind = iota + 1
	partAbsent
	partHighWatermark
)

// partOp is one operation's input: a read or absent replay at offset, or a high
// watermark read as hw.
type partOp struct {
	part   string
	kind   partOpKind
	offset uint64
	hw     uint64
}

func (h *PartitionHistory) add(in partOp, callNs, returnNs int64) {
	h.ops[in.part] = append(h.ops[in.part], porcupine.Operation{Input: in, Call: callNs, Return: returnNs})
}

// Read records that a delivery or a replay, sent at callNs and answered at returnNs,
// returned message id at offset of partition part (any name that tells partitions of
// every topic incarnation apart).
func (h *PartitionHistory) Read(part string, offset, id uint64, callNs, returnNs int64) {
	vals := h.vals[part]
	if vals == nil {
		vals = map[uint64]uint64{}
		h.vals[part] = vals
	}
	if prev, ok := vals[offset]; !ok {
		vals[offset] = id
	} else if prev != id {
		h.conflicts = append(h.conflicts, fmt.Sprintf("partition %s offset %d was read as message %d, then as message %d (at %d ns)", part, offset, prev, id, returnNs))
	}
	h.add(partOp{part: part, kind: partRead, offset: offset}, callNs, returnNs)
}

// ReadAbsent records that a replay of offset found no record there (nothing at or above
// the high watermark is served).
func (h *PartitionHistory) ReadAbsent(part string, offset uint64, callNs, returnNs int64) {
	h.add(partOp{part: part, kind: partAbsent, offset: offset}, callNs, returnNs)
}

// HighWatermark records a partition's high watermark read from its stats. A zero is not
// recorded: stats whose owner did not answer show zeros, and a true zero says nothing.
func (h *PartitionHistory) HighWatermark(part string, hw uint64, callNs, returnNs int64) {
	if hw == 0 {
		return
	}
	h.add(partOp{part: part, kind: partHighWatermark, hw: hw}, callNs, returnNs)
}

// Ops is how many operations the history holds (the checker's work).
func (h *PartitionHistory) Ops() int {
	n := 0
	for _, ops := range h.ops { //narad:unordered (a sum)
		n += len(ops)
	}
	return n
}

// partitionModel: the state is the high watermark, a lower bound that unseen commits
// may raise at any time.
var partitionModel = porcupine.Model{
	Init: func() any { return uint64(0) },
	Step: func(state, input, _ any) (bool, any) {
		hw, in := state.(uint64), input.(partOp)
		switch in.kind {
		case partRead: // the record at offset was visible: the watermark is past it
			return true, max(hw, in.offset+1)
		case partAbsent: // nothing served at offset: the watermark is not past it
			return in.offset >= hw, hw
		default: // the watermark never goes back
			return in.hw >= hw, in.hw
		}
	},
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation { return [][]porcupine.Operation{ops} },
	DescribeOperation: func(input, _ any) string {
		in := input.(partOp)
		switch in.kind {
		case partRead:
			return fmt.Sprintf("read %d", in.offset)
		case partAbsent:
			return fmt.Sprintf("absent %d", in.offset)
		}
		return fmt.Sprintf("hw %d", in.hw)
	},
}

// Check reports the first offset read as two ids, else runs porcupine over each
// partition's operations and names the first partition whose history no order explains.
func (h *PartitionHistory) Check() error {
	if len(h.conflicts) > 0 {
		return fmt.Errorf("%s: an append-only array never changes a value", h.conflicts[0])
	}
	for _, part := range slices.Sorted(maps.Keys(h.ops)) {
		ops := h.ops[part]
		if !porcupine.CheckOperations(partitionModel, ops) {
			return fmt.Errorf("partition %s: its reads and high watermarks fit no order of an append-only array whose high watermark never falls: %s", part, describePart(ops))
		}
	}
	return nil
}

// describePart lists the operations a violation is about, at most describeMax of them,
// latest first (the violation is usually near the end).
func describePart(ops []porcupine.Operation) string {
	const describeMax = 12
	s := ""
	for i := len(ops) - 1; i >= 0 && len(ops)-i <= describeMax; i-- {
		op := ops[i]
		s += fmt.Sprintf("[%s %d..%d]", partitionModel.DescribeOperation(op.Input, nil), op.Call, op.Return)
	}
	return s
}
