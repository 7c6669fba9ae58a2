package nodesim

import (
	"slices"

	"github.com/narad/narad/invariants"
)

// model is what the clients were told and saw.
type model struct {
	nextID    uint64
	produced  map[uint64][]byte             // id -> payload, every message ever sent
	sent      map[uint64]sentMsg            // id -> where and how it was produced
	acked     map[uint64]bool               // answered 202
	refused   map[uint64]bool               // definitely refused
	delivered map[uint64]int                // id -> deliveries
	firstNs   map[uint64]int64              // id -> when it was first delivered
	keys      map[uint64][]recKey           // id -> the offsets it was read at
	seen      map[partRef]map[uint64]uint64 // partition -> offset -> id delivered there
	offsets   map[partRef][]uint64          // partition -> the offsets seen, in the order first seen
	missing   int                           // acked and never delivered

	recs      map[recKey]*recState  // every record delivered under a lease
	handles   map[string]*leaseView // receipt handle -> its lease
	unsettled int                   // records whose last lease was not settled by an ack answered OK
	removed   map[partRef]uint64    // the highest OldestOffset read from a partition's stats
	commitMs  map[recKey]int64      // the commit time a read showed
}

// sentMsg is how a message was produced: its topic (index into run.topics), its pinned
// partition (-1: none) and its key.
type sentMsg struct {
	topic  int
	pin    int64
	hasKey bool
	key    []byte
	callNs int64
}

// ack notes a 202 for id.
func (m *model) ack(id uint64) {
	if !m.acked[id] && m.delivered[id] == 0 {
		m.missing++
	}
	m.acked[id] = true
}

// deliver notes a delivery of id at nowNs.
func (m *model) deliver(id uint64, nowNs int64) {
	if m.delivered[id] == 0 {
		m.firstNs[id] = nowNs
		if m.acked[id] {
			m.missing--
		}
	}
	m.delivered[id]++
}

type partRef struct {
	topicID uint64
	index   uint32
}

// recKey names one record: a partition and an offset.
type recKey struct {
	pr  partRef
	off uint64
}

func newModel() model {
	return model{produced: map[uint64][]byte{}, sent: map[uint64]sentMsg{}, acked: map[uint64]bool{},
		refused: map[uint64]bool{}, delivered: map[uint64]int{}, firstNs: map[uint64]int64{},
		keys: map[uint64][]recKey{}, seen: map[partRef]map[uint64]uint64{}, offsets: map[partRef][]uint64{},
		recs: map[recKey]*recState{}, handles: map[string]*leaseView{}, removed: map[partRef]uint64{}, commitMs: map[recKey]int64{}}
}

// newMessage makes a unique payload: "id:<n>:" then random bytes.
func (m *model) newMessage(u *run) (uint64, []byte) {
	m.nextID++
	rest := make([]byte, u.r.Intn(u.o.PayloadMax+1))
	_, _ = u.r.Read(rest) // a seeded generator never fails
	p := invariants.MessagePayload(m.nextID, rest)
	m.produced[m.nextID] = p
	return m.nextID, p
}

// deliveredAt notes that offset of pr delivered id; false if it delivered another before.
func (m *model) deliveredAt(pr partRef, offset, id uint64) bool {
	offs := m.seen[pr]
	if offs == nil {
		offs = map[uint64]uint64{}
		m.seen[pr] = offs
	}
	if prev, ok := offs[offset]; ok {
		return prev == id
	}
	offs[offset] = id
	m.offsets[pr] = append(m.offsets[pr], offset)
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
