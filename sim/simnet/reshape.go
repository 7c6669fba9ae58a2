package simnet

import "github.com/narad/narad/core/rng"

// The shapes Reshape draws.
const (
	ShapeHealed   byte = 'h' // every link restored
	ShapeIsolated byte = 'i' // node A cut from every other node, both ways
	ShapePair     byte = 'p' // A and B cut from each other, both ways
	ShapeOneWay   byte = 'w' // A's messages to B lost, B's to A delivered
	ShapeSplit    byte = 's' // A, B (a minority of two) cut from the others both ways
)

// Reshape heals every link and draws the next network shape among ids (r is the
// simulation's stream): healed, one node isolated, a pair cut both ways, a one-way cut,
// or, among five nodes or more, a 2|3 split (majority | minority). It returns the shape
// and the nodes it names (A and B may be equal: nothing cut).
func (n *Net[M]) Reshape(r *rng.Rand, ids []uint64) (shape byte, a, b uint64) {
	n.Heal()
	a, b = ids[r.Intn(len(ids))], ids[r.Intn(len(ids))]
	shapes := 4
	if len(ids) >= 5 {
		shapes = 5
	}
	switch r.Intn(shapes) {
	case 4:
		if a == b {
			b = ids[(indexOf(ids, a)+1)%len(ids)]
		}
		n.split(ids, a, b)
		return ShapeSplit, a, b
	case 1:
		for _, id := range ids {
			if id != a {
				n.Partition(a, id)
			}
		}
		return ShapeIsolated, a, b
	case 2:
		n.Partition(a, b)
		return ShapePair, a, b
	case 3:
		n.Cut(a, b)
		return ShapeOneWay, a, b
	}
	return ShapeHealed, a, b
}

// split cuts a and b from every other node, both ways (they still reach each other).
func (n *Net[M]) split(ids []uint64, a, b uint64) {
	for _, id := range ids {
		if id != a && id != b {
			n.Partition(a, id)
			n.Partition(b, id)
		}
	}
}

func indexOf(ids []uint64, id uint64) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return 0
}
