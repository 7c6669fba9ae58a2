package invariants

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/anishathalye/porcupine"
)

// History is what the simulated clients did and saw, per message, for the
// linearizability check of DESIGN.md section 5 (porcupine): a message answered 202 is
// seen by every read that starts after the answer, and a produce that was definitely
// refused is never seen.
//
// In Narad a consume is not a linearizable read of a produce: a record becomes visible
// when the dispatcher has committed it to its partition, a little after the 202. The
// read that must see every 202 is the one after healing: FinalRead records, for each
// message, whether any consumer ever got it, as a read that starts once everything else
// has ended. Deliveries during the run are reads too, of a weaker kind: each must follow
// (or overlap) the produce it delivers, which catches a message seen before it was sent
// and a refused one seen at all.
type History struct {
	ops map[uint64][]porcupine.Operation // message id -> its operations
}

// Outcome is what a producer learned.
type Outcome uint8

// The outcomes.
const (
	Accepted  Outcome = iota + 1 // 202
	Refused                      // a definite refusal: nothing was stored
	Ambiguous                    // a timeout, a 5xx, or the node died: it may have been stored
)

type (
	produceIn struct {
		id      uint64
		outcome Outcome
	}
	deliverIn   struct{ id uint64 }
	finalReadIn struct {
		id   uint64
		seen bool
	}
)

// NewHistory returns an empty history.
func NewHistory() *History { return &History{ops: map[uint64][]porcupine.Operation{}} }

func (h *History) add(id uint64, in any, callNs, returnNs int64) {
	h.ops[id] = append(h.ops[id], porcupine.Operation{Input: in, Call: callNs, Return: returnNs})
}

// Produce records a produce of message id, sent at callNs and answered (or given up) at
// returnNs.
func (h *History) Produce(id uint64, callNs, returnNs int64, o Outcome) {
	h.add(id, produceIn{id: id, outcome: o}, callNs, returnNs)
}

// Deliver records that a consume sent at callNs and answered at returnNs got message id.
func (h *History) Deliver(id uint64, callNs, returnNs int64) {
	h.add(id, deliverIn{id: id}, callNs, returnNs)
}

// FinalRead records, at atNs (after every other operation), whether message id was ever
// delivered.
func (h *History) FinalRead(id uint64, atNs int64, seen bool) {
	h.add(id, finalReadIn{id: id, seen: seen}, atNs, math.MaxInt64)
}

// messageModel: the state of one message is whether it was stored.
var messageModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{false} },
	Step: func(state, input, _ any) []any {
		stored := state.(bool)
		switch in := input.(type) {
		case produceIn:
			switch in.outcome {
			case Accepted:
				return []any{true}
			case Refused:
				return []any{stored}
			default:
				return []any{stored, true}
			}
		case deliverIn:
			if stored {
				return []any{true}
			}
		case finalReadIn:
			if stored == in.seen {
				return []any{stored}
			}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(bool) == b.(bool) },
}

// Close gives each of messages 1..n its final read at atNs (delivered says whether it
// was ever delivered) and checks the history (Check).
func (h *History) Close(atNs int64, n uint64, delivered func(id uint64) bool) error {
	for id := uint64(1); id <= n; id++ {
		h.FinalRead(id, atNs, delivered(id))
	}
	return h.Check()
}

// Check runs porcupine over every message's operations (one partition per message) and,
// on a violation, names the first message, by id, whose history no order explains.
func (h *History) Check() error {
	ids := slices.Sorted(maps.Keys(h.ops))
	var all []porcupine.Operation
	for _, id := range ids {
		all = append(all, h.ops[id]...)
	}
	model := messageModel.ToModel()
	whole := model
	whole.Partition = byMessage
	if porcupine.CheckOperations(whole, all) {
		return nil
	}
	for _, id := range ids {
		if !porcupine.CheckOperations(model, h.ops[id]) {
			return fmt.Errorf("message %d: its produce, deliveries and final read are not linearizable: %s", id, describe(h.ops[id]))
		}
	}
	return fmt.Errorf("the history is not linearizable, though each message's is")
}

// byMessage partitions operations by message id, keeping their order.
func byMessage(ops []porcupine.Operation) [][]porcupine.Operation {
	idx := map[uint64]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		id := messageOf(op.Input)
		i, ok := idx[id]
		if !ok {
			i = len(parts)
			idx[id] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

func messageOf(input any) uint64 {
	switch in := input.(type) {
	case produceIn:
		return in.id
	case deliverIn:
		return in.id
	case finalReadIn:
		return in.id
	}
	return 0
}

func describe(ops []porcupine.Operation) string {
	s := ""
	for _, op := range ops {
		ret := fmt.Sprint(op.Return)
		if op.Return == math.MaxInt64 {
			ret = "end"
		}
		s += fmt.Sprintf("[%T%+v %d..%s]", op.Input, op.Input, op.Call, ret)
	}
	return s
}
