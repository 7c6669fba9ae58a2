package invariants

// Moves records the partition changes of records a simulator saw announced (a
// dispatcher's reroute, a synchronous produce's walk past a dead owner): invariant 8
// lets a record land where a chain of such moves leads from the partition its produce
// named.
type Moves struct {
	from map[PartRef][]move
}

type move struct {
	atNs int64
	to   uint32
}

// NewMoves returns an empty record.
func NewMoves() *Moves { return &Moves{from: map[PartRef][]move{}} }

// Add notes records of partition from moved to partition to (same incarnation) at atNs.
func (m *Moves) Add(from PartRef, to uint32, atNs int64) {
	m.from[from] = append(m.from[from], move{atNs: atNs, to: to})
}

// LeadTo reports whether moves made at or after sinceNs lead from partition from to
// partition to of incarnation topicID (moves chain when a sibling fails too).
func (m *Moves) LeadTo(topicID uint64, from, to uint32, sinceNs int64) bool {
	seen := map[uint32]bool{from: true}
	frontier := []uint32{from}
	for len(frontier) > 0 {
		p := frontier[0]
		frontier = frontier[1:]
		for _, mv := range m.from[PartRef{TopicID: topicID, Index: p}] {
			if mv.atNs < sinceNs || seen[mv.to] {
				continue
			}
			if mv.to == to {
				return true
			}
			seen[mv.to] = true
			frontier = append(frontier, mv.to)
		}
	}
	return false
}
