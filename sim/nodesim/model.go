package nodesim

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// model is what the clients were told and saw.
type model struct {
	nextID    uint64
	produced  map[uint64][]byte             // id -> payload, every message ever sent
	acked     map[uint64]bool               // answered 202
	refused   map[uint64]bool               // definitely refused
	delivered map[uint64]int                // id -> deliveries
	seen      map[partRef]map[uint64]uint64 // partition -> offset -> id delivered there
	missing   int                           // acked and never delivered
}

// ack notes a 202 for id.
func (m *model) ack(id uint64) {
	if !m.acked[id] && m.delivered[id] == 0 {
		m.missing++
	}
	m.acked[id] = true
}

// deliver notes a delivery of id.
func (m *model) deliver(id uint64) {
	if m.delivered[id] == 0 && m.acked[id] {
		m.missing--
	}
	m.delivered[id]++
}

type partRef struct {
	topicID uint64
	index   uint32
}

func newModel() model {
	return model{produced: map[uint64][]byte{}, acked: map[uint64]bool{}, refused: map[uint64]bool{},
		delivered: map[uint64]int{}, seen: map[partRef]map[uint64]uint64{}}
}

// newMessage makes a unique payload: "id:<n>:" then random bytes.
func (m *model) newMessage(u *run) (uint64, []byte) {
	m.nextID++
	rest := make([]byte, u.r.Intn(u.o.PayloadMax+1))
	u.r.Read(rest)
	p := invariants.MessagePayload(m.nextID, rest)
	m.produced[m.nextID] = p
	return m.nextID, p
}

// onConsumed checks every delivered message (invariant 3) and settles it: in the fault
// phase some are acked, some released, some left to expire; while healing all are acked.
func (u *run) onConsumed(req request, resp node.Response) {
	u.record('c', uint64(len(resp.Messages)), boolBit(resp.Err != nil))
	var settle, release []string
	t := u.topics[req.topic]
	for _, msg := range resp.Messages {
		id, ok := invariants.MessageID(msg.Payload)
		if !ok || !bytes.Equal(u.m.produced[id], msg.Payload) {
			u.violate(fmt.Errorf("invariant 3: delivered a message that was never produced with these bytes (%q…)", msg.Payload[:min(len(msg.Payload), 24)]))
			return
		}
		if u.m.refused[id] {
			u.violate(fmt.Errorf("delivered message %d whose produce was definitely refused", id))
		}
		u.m.deliver(id)
		u.hist.Deliver(id, req.callNs, u.s.Now())
		u.stats.Delivered++
		if u.m.delivered[id] > 1 {
			u.stats.Duplicates++
		}
		if !u.m.deliveredAt(partRef{topicID: t.id, index: msg.Partition}, msg.Offset, id) {
			u.violate(fmt.Errorf("invariant 4: offset %d of %s/%d delivered message %d, and another message before", msg.Offset, t.name, msg.Partition, id))
			return
		}
		switch x := u.r.Intn(10); {
		case u.healing || x < 7:
			settle = append(settle, msg.ReceiptHandle)
		case x == 7:
			release = append(release, msg.ReceiptHandle)
		}
	}
	u.sendAcks(req.client, t.name, settle, node.AckSettle)
	u.sendAcks(req.client, t.name, release, node.AckRelease)
}

func (u *run) sendAcks(c int, topic string, handles []string, mode node.AckMode) {
	if len(handles) == 0 {
		return
	}
	u.stats.Acks += uint64(len(handles))
	u.submit(c, reqAck, 0, nil, func(now int64, tok uint64) { u.n.Ack(now, tok, topic, handles, mode) })
}

// deliveredAt notes that offset of pr delivered id; false if it delivered another before.
func (m *model) deliveredAt(pr partRef, offset, id uint64) bool {
	offs := m.seen[pr]
	if offs == nil {
		offs = map[uint64]uint64{}
		m.seen[pr] = offs
	}
	if prev, ok := offs[offset]; ok && prev != id {
		return false
	}
	offs[offset] = id
	return true
}

// undelivered lists acknowledged messages never delivered, in id order.
func (m *model) undelivered() []uint64 {
	var out []uint64
	for id := range m.acked { //narad:sorted
		if m.delivered[id] == 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m { //narad:sorted
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
